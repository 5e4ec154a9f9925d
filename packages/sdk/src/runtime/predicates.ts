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

/** The CAPI label used by `--watch-filter` to split objects between controller instances. */
export const WATCH_FILTER_LABEL = "cluster.x-k8s.io/watch-filter";
/** The CAPI annotation that pauses reconciliation of an object. */
export const PAUSED_ANNOTATION = "cluster.x-k8s.io/paused";

/**
 * CAPI's `ResourceHasFilterLabel`: with an empty filter value every object passes; otherwise only
 * objects labelled `cluster.x-k8s.io/watch-filter=<value>`. This is the multi-tenancy contract behind
 * the `--watch-filter` flag.
 */
export function hasWatchFilterLabel<T extends KubernetesObject>(
  watchFilterValue: string | undefined,
): Predicate<T> {
  if (!watchFilterValue) return {};
  return predicateFor((obj) => obj.metadata?.labels?.[WATCH_FILTER_LABEL] === watchFilterValue);
}

/**
 * Drops events of paused objects. By default "paused" means the object carries the
 * `cluster.x-k8s.io/paused` annotation (CAPI's `HasPaused`); pass `isPaused` to use another rule, for
 * example the contract helper that also looks at the owning Cluster's `spec.paused`.
 *
 * Deletes always pass, so a paused object's deletion is still seen.
 */
export function notPaused<T extends KubernetesObject>(
  isPaused: (obj: T) => boolean = (obj) =>
    obj.metadata?.annotations?.[PAUSED_ANNOTATION] !== undefined,
): Predicate<T> {
  return {
    create: (obj) => !isPaused(obj),
    // Judged on the new object: pausing stops events, unpausing lets the next reconcile through.
    update: (_oldObj, newObj) => !isPaused(newObj),
  };
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
