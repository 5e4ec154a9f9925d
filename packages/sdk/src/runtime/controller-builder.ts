/**
 * `ControllerBuilder`: a controller assembled controller-runtime style, from its primary kind, the
 * kinds it owns or watches, raw sources, event filters and options.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KindCacheOptions } from "./cache.js";
import {
  Controller,
  type ControllerHost,
  type ControllerOptions,
  type MapFunc,
  type Reconciler,
} from "./controller.js";
import type { InformerHandler } from "./informer-types.js";
import type { Predicate } from "./predicates.js";
import { QueuePriority } from "./queue.js";
import { objectKeyString, type ResourceDescriptor } from "./resource.js";
import type { RawSource } from "./source.js";

interface WatchSpec {
  resource: ResourceDescriptor;
  cache: KindCacheOptions<KubernetesObject> | undefined;
  attach: (controller: Controller, predicates: Predicate[]) => InformerHandler<KubernetesObject>;
  predicates: Predicate[];
  eventFilters: boolean;
}

/** Options of {@link ControllerBuilder.for}, `owns` and `watches`. */
export interface SourceOptions<T extends KubernetesObject> {
  /** Predicates for this source only. */
  predicates?: Predicate<T>[];
  /**
   * Apply the controller's event filters ({@link ControllerBuilder.withEventFilter}) to this source.
   * Default true. Turn it off for a source whose objects cannot pass them, e.g. kinds that never carry
   * the label a filter looks for, and check the primary object in the reconcile instead.
   */
  eventFilters?: boolean;
  /**
   * Scope, transform and indexers of the kind's shared informer. Every watch of one kind must ask
   * for the same scope and transform (the cache throws otherwise); indexers add up.
   */
  cache?: KindCacheOptions<T>;
}

/**
 * Builds a controller, controller-runtime style: `for` the primary kind, `owns` kinds it creates (mapped
 * through controller owner references), `watches` other kinds through map functions, predicates,
 * options, then `complete` with the reconciler. Event filters (`withEventFilter`) apply to every
 * source, unless a source opts out with `eventFilters: false`. The runtime knows nothing of Cluster
 * API: CAPI's watch filter (R20) and pause are predicates of `@capi-ts/sdk/contract` a controller adds
 * like any other.
 *
 * @example
 * ```ts
 * import { hasWatchFilterLabel, notPaused } from "@capi-ts/sdk/contract";
 *
 * manager
 *   .controller("foomachinepool")
 *   .for(FooMachinePoolResource, { predicates: [generationChanged()] })
 *   .owns(SecretResource, { eventFilters: false })
 *   .watches(MachinePoolResource, (pool) => [{ namespace: pool.metadata!.namespace, name: pool.spec.template.spec.infrastructureRef.name }])
 *   .withEventFilter(hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue), notPaused())
 *   .withOptions({ maxConcurrentReconciles: 4, reconcileTimeoutMs: 60_000 })
 *   .complete(async (request, { cache, client, log }) => {
 *     const pool = await cache.get(FooMachinePoolResource, request);
 *     if (!pool) return;
 *     // … converge, then:
 *     return { requeueAfter: 30_000 };
 *   });
 * ```
 */
export class ControllerBuilder {
  private readonly host: ControllerHost;
  private readonly name: string;
  private primary: WatchSpec | undefined;
  private readonly secondary: WatchSpec[] = [];
  private readonly rawSources: RawSource[] = [];
  private readonly filters: Predicate[] = [];
  private options: ControllerOptions = {};

  /** Starts a builder; use `manager.controller(name)`. */
  constructor(host: ControllerHost, name: string) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
      throw new TypeError(
        `controller name "${name}" must be lower-case letters, digits, "-" or "." (it becomes a metrics label and the field manager)`,
      );
    }
    this.host = host;
    this.name = name;
  }

  /** The primary kind: its keys are what the reconciler receives. Exactly one call is required. */
  for<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: SourceOptions<T> = {},
  ): this {
    if (this.primary) {
      throw new Error(
        `controller ${this.name}: for() was already called with ${this.primary.resource.kind}; a controller has one primary kind`,
      );
    }
    this.primary = {
      resource,
      cache: options.cache as KindCacheOptions<KubernetesObject> | undefined,
      predicates: (options.predicates ?? []) as Predicate[],
      eventFilters: options.eventFilters !== false,
      attach: (controller, predicates) => controller.forHandler(predicates),
    };
    return this;
  }

  /** A kind the primary objects own: events map to the controlling owner of the primary kind. */
  owns<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: SourceOptions<T> = {},
  ): this {
    this.secondary.push({
      resource,
      cache: options.cache as KindCacheOptions<KubernetesObject> | undefined,
      predicates: (options.predicates ?? []) as Predicate[],
      eventFilters: options.eventFilters !== false,
      attach: (controller, predicates) => controller.ownsHandler(predicates),
    });
    return this;
  }

  /** Another kind whose events map to primary keys through `map`. */
  watches<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    map: MapFunc<T>,
    options: SourceOptions<T> = {},
  ): this {
    this.secondary.push({
      resource,
      cache: options.cache as KindCacheOptions<KubernetesObject> | undefined,
      predicates: (options.predicates ?? []) as Predicate[],
      eventFilters: options.eventFilters !== false,
      attach: (controller, predicates) =>
        controller.mapHandler(map as MapFunc<KubernetesObject>, predicates),
    });
    return this;
  }

  /**
   * A source that is not an informer of the management cluster (controller-runtime's
   * `WatchesRawSource`), e.g. a workload cluster's Nodes through the `source()` of a `ClusterCache`
   * (`@capi-ts/sdk/clustercache`). Its requests are enqueued as they come; the watch filter and event
   * filters do not apply (the reconcile checks the primary object).
   */
  watchesRawSource(source: RawSource): this {
    this.rawSources.push(source);
    return this;
  }

  /**
   * Predicates applied to every source of this controller (as controller-runtime's
   * `WithEventFilter`), except sources built with `eventFilters: false`.
   */
  withEventFilter(...predicates: Predicate[]): this {
    this.filters.push(...predicates);
    return this;
  }

  /** Concurrency, reconcile timeout, rate limiter. */
  withOptions(options: ControllerOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  /** Builds the controller, wires its informers and registers it with the manager. */
  complete(reconciler: Reconciler): Controller {
    if (!this.primary) {
      throw new Error(`controller ${this.name}: call for(resource) before complete()`);
    }
    if (typeof reconciler !== "function") {
      throw new TypeError(`controller ${this.name}: complete() needs the reconcile function`);
    }
    // Every informer first, so a cache conflict throws before anything is wired or registered.
    const sources = [this.primary, ...this.secondary].map((spec) => ({
      spec,
      informer: this.host.cache.informerFor(spec.resource, spec.cache, `controller "${this.name}"`),
    }));
    const controller = new Controller(
      this.host,
      this.name,
      this.primary.resource,
      reconciler,
      this.options,
    );
    for (const { spec, informer } of sources) {
      const filters = spec.eventFilters ? this.filters : [];
      informer.addEventHandler(spec.attach(controller, [...filters, ...spec.predicates]));
    }
    for (const source of this.rawSources) {
      source.start((requests) => {
        const keys = new Set(requests.map((request) => objectKeyString(request)));
        for (const key of keys) controller.queue.add(key, { priority: QueuePriority.Normal });
      });
    }
    this.host.register(controller);
    return controller;
  }
}
