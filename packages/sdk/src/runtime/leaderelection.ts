import { hostname } from "node:os";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import { AlreadyExistsError, ConflictError, NotFoundError } from "./errors.js";
import { type RuntimeLogger, silentLogger } from "./logging.js";
import { LeaseResource, type ResourceDescriptor } from "./resource.js";

/** The Lease object as JSON (times are RFC 3339 strings with microseconds). */
interface LeaseObject extends KubernetesObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const Lease = LeaseResource as unknown as ResourceDescriptor<LeaseObject>;

/** Options of {@link LeaderElector}. */
export interface LeaderElectionOptions {
  /** Client for the Lease. */
  client: KubeClient;
  /** Namespace of the Lease. */
  namespace: string;
  /** Name of the Lease (the election id). */
  name: string;
  /** This candidate's identity; default `<hostname>_<random>`. */
  identity?: string;
  /** How long a lease is valid without renewal, ms. Default 15,000. */
  leaseDurationMs?: number;
  /** The leader gives up if it could not renew for this long, ms. Default 10,000. */
  renewDeadlineMs?: number;
  /** Interval between acquire/renew attempts, ms. Default 2,000. */
  retryPeriodMs?: number;
  /** Where acquiring, renewing and losing the lease is logged; silent by default. */
  logger?: RuntimeLogger;
  /** Called with true when leadership is gained and false when lost or released. */
  onStatus?: (leading: boolean) => void;
}

function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and defaults
 * (15 s lease, 10 s renew deadline, 2 s retry). Expiry is judged on the local clock from when the
 * record last changed, so clock skew between candidates does not matter. On release the holder is
 * cleared so a standby takes over on its next retry instead of waiting out the lease.
 *
 * @example
 * ```ts
 * const elector = new LeaderElector({ client, namespace: "capi-system", name: "my-provider-leader" });
 * await elector.acquire(signal);      // resolves once leading
 * elector.lost.then(() => shutdown()); // leadership lost: stop reconciling
 * await elector.release();
 * ```
 */
export class LeaderElector {
  /** This candidate's identity (the Lease's holderIdentity while leading). */
  readonly identity: string;
  /** Resolves when leadership, once held, is lost (renewal failed past the deadline). */
  readonly lost: Promise<void>;
  private readonly options: LeaderElectionOptions;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly log: RuntimeLogger;
  private observed: { record: string; at: number } | undefined;
  private lease: LeaseObject | undefined;
  private leading = false;
  private renewTimer: NodeJS.Timeout | undefined;
  private lastRenew = 0;
  private resolveLost: () => void = () => {};
  private stopped = false;
  private renewing: Promise<void> | undefined;

  /** Creates a candidate; throws on inconsistent timings. */
  constructor(options: LeaderElectionOptions) {
    this.options = options;
    this.identity = options.identity ?? `${hostname()}_${Math.random().toString(16).slice(2, 10)}`;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (
      !(this.leaseDurationMs > this.renewDeadlineMs && this.renewDeadlineMs > this.retryPeriodMs)
    ) {
      throw new RangeError(
        `leader election needs leaseDuration > renewDeadline > retryPeriod, got ${this.leaseDurationMs} / ${this.renewDeadlineMs} / ${this.retryPeriodMs} ms`,
      );
    }
    this.log = (options.logger ?? silentLogger()).child({
      component: "leader-election",
      lease: `${options.namespace}/${options.name}`,
      identity: this.identity,
    });
    this.lost = new Promise((resolve) => {
      this.resolveLost = resolve;
    });
  }

  /**
   * True while this candidate holds the lease and can prove it on its own clock: the last renewal that
   * succeeded started less than the renew deadline ago. Other candidates wait a full lease duration
   * (longer) from when they saw that renewal, so a process frozen past its lease (a GC pause, a stopped
   * VM, SIGSTOP) answers false the moment it runs again, before any timer or response is handled.
   * Answering false for that reason also ends the leadership ({@link LeaderElector.lost}).
   */
  isLeader(): boolean {
    if (!this.leading) return false;
    const sinceRenew = performance.now() - this.lastRenew;
    if (sinceRenew >= this.renewDeadlineMs) {
      this.loseLeadership(sinceRenew);
      return false;
    }
    return true;
  }

  /**
   * Tries every retry period until the lease is ours; then renews in the background. Resolves `true`
   * once leading, `false` if `signal` aborted first.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    this.log.info("waiting to acquire the lease");
    while (!signal.aborted && !this.stopped) {
      const attemptStarted = performance.now();
      if (await this.tryAcquireOrRenew()) {
        this.leading = true;
        this.lastRenew = attemptStarted;
        this.log.info("acquired the lease; leading");
        this.options.onStatus?.(true);
        this.scheduleRenew();
        return true;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.jittered(this.retryPeriodMs));
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
    }
    return false;
  }

  /**
   * Stops renewing without touching the Lease: another candidate takes over once it expires. For a
   * process that must not hand over early (or is going away uncleanly).
   */
  async stop(): Promise<boolean> {
    this.stopped = true;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    await this.renewing;
    const wasLeading = this.leading;
    if (wasLeading) {
      this.leading = false;
      this.options.onStatus?.(false);
    }
    return wasLeading;
  }

  /** Stops renewing and, if leading, clears the holder so another candidate can take over at once. */
  async release(): Promise<void> {
    if (!(await this.stop())) return;
    const lease = this.lease;
    if (!lease?.spec || lease.spec.holderIdentity !== this.identity) return;
    const now = microTime(new Date());
    try {
      await this.options.client.update(Lease, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: undefined,
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      } as LeaseObject);
      this.log.info("released the lease");
    } catch (error) {
      this.log.warn({ err: error }, "could not release the lease; it will expire on its own");
    }
  }

  private jittered(ms: number): number {
    return ms * (1 + Math.random() * 0.2);
  }

  private scheduleRenew(): void {
    const dueAt = performance.now() + this.retryPeriodMs;
    this.renewTimer = setTimeout(() => {
      // A timer cannot fire while the event loop is blocked: say so, before the lease is lost to it.
      const lateMs = performance.now() - dueAt;
      if (lateMs >= this.retryPeriodMs) {
        this.log.warn(
          { lateMs: Math.round(lateMs), renewDeadlineMs: this.renewDeadlineMs },
          "lease renewal ran late: the event loop was blocked (see the event-loop log lines)",
        );
      }
      this.renewing = this.renew();
    }, this.retryPeriodMs);
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    if (this.stopped || !this.isLeader()) return;
    // Validity counts from when the request left, not when the answer came: the server may have
    // written the renewal at any moment in between, and other candidates count from then.
    const attemptStarted = performance.now();
    const ok = await this.tryAcquireOrRenew();
    if (this.stopped || !this.leading) return;
    const now = performance.now();
    if (ok) this.lastRenew = attemptStarted;
    if (now - this.lastRenew >= this.renewDeadlineMs) {
      this.loseLeadership(now - this.lastRenew);
      return;
    }
    this.scheduleRenew();
  }

  private loseLeadership(sinceRenewMs: number): void {
    if (!this.leading) return;
    this.leading = false;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.log.error(
      { sinceLastRenewMs: Math.round(sinceRenewMs) },
      "could not renew the lease before the renew deadline; leadership lost",
    );
    this.options.onStatus?.(false);
    this.resolveLost();
  }

  /** One attempt, as client-go's tryAcquireOrRenew. Never throws. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name } = this.options;
    const now = new Date();
    const durationSeconds = Math.max(1, Math.round(this.leaseDurationMs / 1000));
    try {
      let current: LeaseObject;
      try {
        current = await client.get(Lease, { namespace, name });
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        const created = await client.create(Lease, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: {
            holderIdentity: this.identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        this.lease = created;
        this.observe(created);
        return true;
      }
      this.observe(current);
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? "";
      const validFor = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      const observedAt = this.observed?.at ?? 0;
      if (holder !== "" && holder !== this.identity && observedAt + validFor > performance.now()) {
        return false;
      }
      const takingOver = holder !== this.identity;
      const updated = await client.update(Lease, {
        ...current,
        spec: {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: takingOver ? microTime(now) : (spec.acquireTime ?? microTime(now)),
          renewTime: microTime(now),
          leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && holder !== "" ? 1 : 0),
        },
      });
      this.lease = updated;
      this.observe(updated);
      return true;
    } catch (error) {
      if (error instanceof ConflictError || error instanceof AlreadyExistsError) {
        this.log.debug("lost a race for the lease");
      } else {
        this.log.warn({ err: error }, "lease request failed");
      }
      return false;
    }
  }

  private observe(lease: LeaseObject): void {
    const record = JSON.stringify(lease.spec ?? {});
    if (this.observed?.record !== record) this.observed = { record, at: performance.now() };
  }
}
