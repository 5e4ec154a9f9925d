import type { KubernetesObject } from "@kubernetes/client-node";
import { parseLabelSelector } from "./labels.js";

/**
 * Filters events before they reach the work queue. Each method is optional; a missing one lets the
 * event through. Combine with {@link allPredicates}, {@link anyPredicate}, {@link negatePredicate}.
 */
export interface Predicate<T extends KubernetesObject = KubernetesObject> {
  /** An object appeared (or was listed at start-up). */
  create?(obj: T): boolean;
  /** An object changed (or a resync re-announced it, with `oldObj === newObj`). */
  update?(oldObj: T, newObj: T): boolean;
  /** An object was deleted. */
  delete?(obj: T): boolean;
}

/** Evaluates a predicate for one event kind. */
export function evaluatePredicate<T extends KubernetesObject>(
  predicate: Predicate<T>,
  event: "create" | "update" | "delete",
  obj: T,
  oldObj?: T,
): boolean {
  switch (event) {
    case "create":
      return predicate.create ? predicate.create(obj) : true;
    case "update":
      return predicate.update ? predicate.update(oldObj ?? obj, obj) : true;
    case "delete":
      return predicate.delete ? predicate.delete(obj) : true;
  }
}

/**
 * A predicate applying the same test to the object of every event (the new object for updates).
 *
 * @example
 * ```ts
 * const onlyPools = predicateFor((obj) => obj.metadata?.labels?.role === "pool");
 * ```
 */
export function predicateFor<T extends KubernetesObject>(test: (obj: T) => boolean): Predicate<T> {
  return {
    create: test,
    update: (_oldObj, newObj) => test(newObj),
    delete: test,
  };
}

/**
 * Lets updates through only when `metadata.generation` changed, i.e. the spec changed (status-only
 * writes and resyncs are dropped). Creates and deletes pass. As controller-runtime's
 * `GenerationChangedPredicate`.
 *
 * @example
 * ```ts
 * manager.controller("pools").for(PoolResource, { predicates: [generationChanged()] });
 * ```
 */
export function generationChanged<T extends KubernetesObject>(): Predicate<T> {
  return {
    update: (oldObj, newObj) => oldObj.metadata?.generation !== newObj.metadata?.generation,
  };
}

/** Lets updates through only when `metadata.resourceVersion` changed (drops resyncs). */
export function resourceVersionChanged<T extends KubernetesObject>(): Predicate<T> {
  return {
    update: (oldObj, newObj) =>
      oldObj.metadata?.resourceVersion !== newObj.metadata?.resourceVersion,
  };
}

/** Lets updates through only when the labels changed. */
export function labelsChanged<T extends KubernetesObject>(): Predicate<T> {
  return {
    update: (oldObj, newObj) =>
      JSON.stringify(oldObj.metadata?.labels ?? {}) !==
      JSON.stringify(newObj.metadata?.labels ?? {}),
  };
}

/**
 * Keeps objects whose labels match a selector (`a=b`, `!paused`, `env in (x,y)`, …). Invalid selectors
 * throw when the predicate is built.
 */
export function labelSelectorMatches<T extends KubernetesObject>(selector: string): Predicate<T> {
  const parsed = parseLabelSelector(selector);
  return predicateFor((obj) => parsed.matches(obj.metadata?.labels));
}

/** All predicates must pass. */
export function allPredicates<T extends KubernetesObject>(
  ...predicates: Predicate<T>[]
): Predicate<T> {
  return {
    create: (obj) => predicates.every((p) => evaluatePredicate(p, "create", obj)),
    update: (oldObj, newObj) =>
      predicates.every((p) => evaluatePredicate(p, "update", newObj, oldObj)),
    delete: (obj) => predicates.every((p) => evaluatePredicate(p, "delete", obj)),
  };
}

/** At least one predicate must pass. */
export function anyPredicate<T extends KubernetesObject>(
  ...predicates: Predicate<T>[]
): Predicate<T> {
  return {
    create: (obj) => predicates.some((p) => evaluatePredicate(p, "create", obj)),
    update: (oldObj, newObj) =>
      predicates.some((p) => evaluatePredicate(p, "update", newObj, oldObj)),
    delete: (obj) => predicates.some((p) => evaluatePredicate(p, "delete", obj)),
  };
}

/** Inverts a predicate. */
export function negatePredicate<T extends KubernetesObject>(predicate: Predicate<T>): Predicate<T> {
  return {
    create: (obj) => !evaluatePredicate(predicate, "create", obj),
    update: (oldObj, newObj) => !evaluatePredicate(predicate, "update", newObj, oldObj),
    delete: (obj) => !evaluatePredicate(predicate, "delete", obj),
  };
}
