/**
 * {@link PoolMemory}: the little the kit remembers about a pool between reconciles. Everything else
 * is read again each time (the cloud, the objects); what is here only makes the kit safer — it never
 * decides what the pool should be. A restart forgets it, which is always safe.
 *
 * @module
 */

/** A runaway the kit stopped, latched until its fingerprint (the inputs that caused it) changes. */
export interface StoppedRunaway {
  /** The `Ready` reason. */
  readonly reason: string;
  /** What happened and what to fix. */
  readonly message: string;
  /** The inputs it was detected with; a change (a fixed spec, a new bootstrap secret) releases it. */
  readonly fingerprint: string;
}

/**
 * A drain the kit runs before an instance is terminated (pools without MachinePool Machines), by
 * the instance's providerID. A restart forgets it: the drain starts again (its timeout too), and a
 * Node already cordoned is not cordoned again.
 */
export interface DrainProgress {
  /** The instance. */
  readonly instance: string;
  /**
   * When the kit first reached its Node (the timeout counts from here, so time the workload cluster
   * could not be reached never counts toward it).
   */
  since?: number;
  /** Its Node, once found. */
  node?: string;
  /** Whether the kit cordoned the Node (it uncordons it if the instance stays after all). */
  cordonedByKit?: boolean;
  /** When the kit last asked the Eviction API, to space out retries of refused evictions. */
  lastEvictionAt?: number;
  /** The PodDisruptionBudgets that refused the last evictions (`namespace/name`, a few). */
  budgets?: readonly string[];
}

/**
 * What the kit remembers about one pool.
 *
 * @example
 * ```ts
 * const memory = new PoolMemory();
 * memory.markDeparted("aws:///us-east-1a/i-1", clock.now()); // the kit deleted it: no grace
 * ```
 */
export class PoolMemory {
  /** Published IDs the cloud's list left out, and since when. */
  readonly missingSince = new Map<string, number>();
  /**
   * IDs the kit deleted or saw terminating, and when: once they leave the cloud's list they leave
   * `providerIDList` at once (no grace: the kit knows why they are gone).
   */
  readonly departed = new Map<string, number>();
  /** The native rollout that failed on the target version, and when it was first seen. */
  failedRollout: { id: string; at: number } | undefined;
  /** The current streak of transient failures: first at, count, and whether it was reported. */
  transientStreak: { since: number; count: number; reported: boolean } | undefined;
  /**
   * Template versions the kit created for one target stamp that the cloud has not listed with it,
   * and the {@link PoolMemory.runawayReleases} they were counted under.
   */
  templateCreates: { target: string; versions: string[]; releases?: number } | undefined;
  /** The last template-inputs hash per context fingerprint (purity check). */
  lastInputs: { context: string; specHash: string; settings: string } | undefined;
  /** The MachinePool version and template-inputs hash of the last reconcile (version-rollout check). */
  lastVersion: { version: string | undefined; specHash: string } | undefined;
  /**
   * A MachinePool version change that left the template inputs as they were, so that no instance
   * rolls for it: from, to, and the inputs' hash (a change of them ends it). A restart forgets it;
   * the `VersionRollout` condition it set stays until the inputs change.
   */
  versionNotRolled:
    | { from: string | undefined; to: string | undefined; specHash: string }
    | undefined;
  /**
   * `updateGroup(settings)` calls for the same desired settings that the cloud never reported back,
   * and the {@link PoolMemory.runawayReleases} they were counted under.
   */
  settingsUpdates: { desired: string; count: number; releases?: number } | undefined;
  /** `updateGroup(bounds)` calls for the same bounds that the cloud never reported back. */
  boundsUpdates: { desired: string; count: number } | undefined;
  /**
   * `model: "group"`: instances that ran the current spec when the kit last changed only the
   * bootstrap data of the group's model (a token rotation). They report `latestModel: false` from
   * then on but need no replacement. A restart forgets them: they are then replaced (safe, slower).
   */
  tokenOnlyCurrent: ReadonlySet<string> | undefined;
  /** A runaway stopped on this pool. */
  stopped: StoppedRunaway | undefined;
  /**
   * How many times a stopped runaway was released (its inputs changed). The phases that count
   * unconfirmed cloud changes start their count over after a release: each owns its count, and the
   * release only moves this number.
   */
  runawayReleases = 0;
  /** Drains in progress, by providerID (pools without MachinePool Machines). */
  readonly drains = new Map<string, DrainProgress>();

  /**
   * Records that an instance is leaving (the kit deleted it, or saw it terminating): once the cloud's
   * list leaves it out, it leaves `providerIDList` at once, with no grace for a lagging list.
   */
  markDeparted(providerID: string, now: number): void {
    if (providerID !== "") this.departed.set(providerID, now);
  }

  /**
   * Forgets the departures that are over: the cloud no longer lists the instance and its ID left the
   * published list. Publishing the pool's instances calls it; with {@link PoolMemory.markDeparted}
   * it is the only writer of {@link PoolMemory.departed}.
   */
  settleDepartures(listed: ReadonlySet<string>, published: ReadonlySet<string>): void {
    for (const id of [...this.departed.keys()]) {
      if (!listed.has(id) && !published.has(id)) this.departed.delete(id);
    }
  }

  /**
   * {@link PoolMemory.markDeparted} under its old name, which said the opposite of what it does.
   *
   * @deprecated Since 0.3.0: call `markDeparted`. Removed in 0.4.0.
   */
  forget(providerID: string, now: number): void {
    this.markDeparted(providerID, now);
  }
}

/** The memories of every pool of one controller, by `namespace/name`. */
export class PoolMemories {
  readonly #pools = new Map<string, PoolMemory>();

  /** The memory of a pool (created on first use). */
  of(key: { namespace: string; name: string }): PoolMemory {
    const id = `${key.namespace}/${key.name}`;
    let memory = this.#pools.get(id);
    if (!memory) {
      memory = new PoolMemory();
      this.#pools.set(id, memory);
    }
    return memory;
  }

  /** Drops a pool's memory (it was deleted). */
  drop(key: { namespace: string; name: string }): void {
    this.#pools.delete(`${key.namespace}/${key.name}`);
  }
}
