/** What a fault rule matches; every given field must match. */
export interface FaultMatch {
  /** Kubernetes verb(s): get, list, watch, create, update, patch, delete, deletecollection. */
  verb?: string | string[];
  /** Resource plural, e.g. `configmaps` or `machinepools`. */
  resource?: string;
  /** API group (`""` for core). */
  group?: string;
  /** Subresource, e.g. `status`. */
  subresource?: string;
  namespace?: string;
  name?: string;
}

/**
 * A fault: requests matching it fail with `status` (as a `Status` with the real reason), get
 * `latencyMs` of delay first, or have their connection dropped.
 */
export interface FaultRule extends FaultMatch {
  /** How many matching requests it affects before it retires itself (unlimited when absent). */
  count?: number;
  /** Chance in [0, 1] that a matching request is affected (1 when absent). */
  probability?: number;
  /** HTTP status to answer with (500, 503, 429, 409, …). Without it the request proceeds after the latency. */
  status?: number;
  /** Overrides the `Status.reason` (defaults to the real one for the code). */
  reason?: string;
  /** Overrides the `Status.message`. */
  message?: string;
  /** Sets `Retry-After` and `details.retryAfterSeconds` (429 and 503). */
  retryAfterSeconds?: number;
  /** Delay before the request is handled (or failed). */
  latencyMs?: number;
  /** Destroys the connection instead of answering. */
  dropConnection?: boolean;
}

/** A rule once added: how often it fired, and a way to remove it. */
export interface FaultHandle {
  readonly rule: Readonly<FaultRule>;
  /** How many requests it affected so far. */
  readonly hits: number;
  /** Removes the rule. */
  remove(): void;
}

/** The fault-injection controls of a running server (`api.faults`). */
export interface Faults {
  /**
   * Adds a rule; rules are checked in the order added and the first that matches and fires wins.
   *
   * @example
   * ```ts
   * api.faults.add({ verb: "patch", resource: "machinepools", status: 409, count: 1 });
   * api.faults.add({ verb: "list", status: 429, retryAfterSeconds: 1, probability: 0.5 });
   * ```
   */
  add(rule: FaultRule): FaultHandle;
  /** Removes every rule. */
  clear(): void;
  /** The rules in force. */
  list(): FaultHandle[];
  /**
   * Cuts open watch streams, abruptly by default (the client sees a network error), or as a normal
   * end of the response with `graceful: true`. Returns how many were cut.
   */
  cutWatches(filter?: { resource?: string; graceful?: boolean }): number;
  /**
   * Expires the watch window: every resourceVersion handed out so far becomes too old to watch from
   * (410 Gone), and open watches receive an ERROR event with a 410 `Status` and end, so informers relist.
   */
  expireWatchWindow(): void;
  /** Same as `api.restart()`: drops every connection, keeps the state. */
  restart(): Promise<void>;
}

/** A matched request, as the router sees it. */
export interface FaultTarget {
  verb: string;
  resource?: string;
  group?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

class Handle implements FaultHandle {
  hits = 0;
  constructor(
    readonly rule: Readonly<FaultRule>,
    private readonly owner: FaultRules,
  ) {}

  remove(): void {
    this.owner.remove(this);
  }
}

/** Rule storage and matching; the server wires the watch and restart controls in. */
export class FaultRules {
  private handles: Handle[] = [];

  add(rule: FaultRule): FaultHandle {
    if (rule.probability !== undefined && (rule.probability < 0 || rule.probability > 1)) {
      throw new Error(`fault probability must be between 0 and 1, got ${rule.probability}`);
    }
    if (rule.status !== undefined && (rule.status < 100 || rule.status > 599)) {
      throw new Error(`fault status must be an HTTP status code, got ${rule.status}`);
    }
    if (rule.status === undefined && rule.latencyMs === undefined && !rule.dropConnection) {
      throw new Error(
        "a fault rule needs a status, a latencyMs or dropConnection: true to have an effect",
      );
    }
    const h = new Handle({ ...rule }, this);
    this.handles.push(h);
    return h;
  }

  remove(h: FaultHandle): void {
    this.handles = this.handles.filter((x) => x !== h);
  }

  clear(): void {
    this.handles = [];
  }

  list(): FaultHandle[] {
    return [...this.handles];
  }

  /** The rule that fires for this request, if any (counting the hit). */
  pick(target: FaultTarget): FaultRule | undefined {
    for (const h of this.handles) {
      const r = h.rule;
      if (r.verb !== undefined) {
        const verbs = Array.isArray(r.verb) ? r.verb : [r.verb];
        if (!verbs.includes(target.verb)) continue;
      }
      if (r.resource !== undefined && r.resource !== target.resource) continue;
      if (r.group !== undefined && r.group !== target.group) continue;
      if (r.subresource !== undefined && r.subresource !== target.subresource) continue;
      if (r.namespace !== undefined && r.namespace !== target.namespace) continue;
      if (r.name !== undefined && r.name !== target.name) continue;
      if (r.probability !== undefined && Math.random() >= r.probability) continue;
      h.hits++;
      if (r.count !== undefined && h.hits >= r.count) this.remove(h);
      return r;
    }
    return undefined;
  }
}
