/**
 * When the suite calls a pool converged and quiet: the convergence check as core sees it, waiting on
 * it with a timeout that names the root cause, and the steady-state window with the provider's writes
 * in its failure message.
 *
 * @module
 */
import { isProvisioned } from "@capi-ts/sdk/contract";
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { RequestRecord } from "../apiserver/index.js";
import type { RealCapiCore } from "../controlplane/index.js";
import { FIELD_MANAGER, type SuiteEnv } from "./backend.js";
import {
  MachinePools,
  SUITE_NAMESPACE as NAMESPACE,
  type SuiteTimings,
  sleep,
  writtenBy,
} from "./core-scenarios.js";
import {
  ConformanceError,
  type ConformancePoolObject,
  type InvariantMonitor,
} from "./invariants.js";
import { type MachinesScenarioHost, machinesProblem } from "./machines.js";
import { scaled } from "./time-scale.js";
import type {
  ConformanceCore,
  ConformancePool,
  ConformanceProvider,
  MachinePoolConformanceOptions,
} from "./types.js";

/** How long nobody may write before a steady-state window starts, with MachinePool Machines. */
const MACHINES_QUIET_MS = 2_000;
/** The same quiet window against the emulator, whose writes follow each other without rate limits. */
const EMULATOR_QUIET_MS = 1_000;
/** Steady-state measurements when the cloud refused calls the provider may still be retrying. */
const STEADY_STATE_ATTEMPTS = 3;
/**
 * The pause between two looks of a wait: short right after the reason changed (the next step often
 * follows at once), growing while it stays the same (core moves at one reconcile a second). Each
 * look reads the API server and the cloud, so a fixed 40 ms made the waits, not the work, the
 * largest CPU cost of a suite run (the AWS suites' moto server most of all).
 */
const POLL_FIRST_MS = 40;
const POLL_MAX_MS = 160;
/** Verbs that write nothing, which the steady-state checks leave out. */
export const READS = new Set(["get", "list", "watch"]);

/** The suite's timings with their defaults (`MachinePoolConformanceOptions.timeouts`). */
export function suiteTimings(options: MachinePoolConformanceOptions): SuiteTimings {
  const t = options.timeouts ?? {};
  return {
    convergeMs: t.convergeMs ?? 20_000,
    steadyStateMs: t.steadyStateMs ?? 1500,
    settleMs: t.settleMs ?? 500,
    pauseMs: t.pauseMs ?? 1000,
  };
}

/** The InfraMachinePool of `pool`. */
export function poolKey(pool: ConformancePool) {
  return { namespace: pool.namespace, name: pool.name };
}

/** The MachinePool of `pool` (a topology-managed pool's has its own name). */
export function machinePoolKey(pool: ConformancePool) {
  return { namespace: pool.namespace, name: pool.machinePoolName ?? pool.name };
}

/**
 * One write as a failure message names it: verb, resource, name and writer, and for an Event its type
 * and reason (an Event's name is a random suffix; its reason says which code path wrote it).
 */
function describeWrite(write: RequestRecord): string {
  const subresource = write.subresource ? `/${write.subresource}` : "";
  const writer = write.fieldManager ?? write.userAgent ?? "?";
  let what = "";
  if (write.resource === "events" && typeof write.body === "object" && write.body !== null) {
    const event = write.body as { type?: unknown; reason?: unknown; series?: unknown };
    const type = typeof event.type === "string" ? event.type : "";
    const reason = typeof event.reason === "string" ? event.reason : "";
    if (type || reason) what = ` (${[type, reason].filter(Boolean).join(" ").slice(0, 80)})`;
  } else if (write.verb === "patch" && typeof write.body === "object" && write.body !== null) {
    // Which fields a patch touched (never their values) tells a late write's cause apart.
    const fields = patchedFields(write.body, "", 3).slice(0, 6);
    if (fields.length > 0) what = ` (${fields.join(", ").slice(0, 160)})`;
    // A late condition patch names its conditions: type, status and reason (never the message).
    const conditions = patchedConditions(write.body);
    if (conditions) what += ` [conditions: ${conditions}]`;
  }
  return `${write.verb} ${write.resource}${subresource} ${write.name ?? ""}${what} by ${writer}`;
}
/** `writer ×count` of each writer of `writes`, at most five named. */
function writersOf(writes: readonly RequestRecord[]): string {
  const counts = new Map<string, number>();
  for (const write of writes) {
    const writer = write.fieldManager ?? write.userAgent ?? "?";
    counts.set(writer, (counts.get(writer) ?? 0) + 1);
  }
  const named = [...counts].slice(0, 5).map(([writer, n]) => `${writer.slice(0, 80)} ×${n}`);
  return `${named.join(", ")}${counts.size > 5 ? `, and ${counts.size - 5} more` : ""}`;
}

/** `Type=Status Reason` of each condition in a patch body's `status.conditions`, bounded. */
function patchedConditions(body: object): string | undefined {
  const status = (body as { status?: unknown }).status;
  if (typeof status !== "object" || status === null) return undefined;
  const list = (status as { conditions?: unknown }).conditions;
  if (!Array.isArray(list)) return undefined;
  const word = (v: unknown) =>
    typeof v === "string" ? v.replace(/[^\w.-]/g, "").slice(0, 60) : "?";
  return list
    .slice(0, 8)
    .map((c: unknown) => {
      const { type, status: value, reason } = (c ?? {}) as Record<string, unknown>;
      return `${word(type)}=${word(value)} ${word(reason)}`;
    })
    .join(", ");
}
/** Dotted paths of a patch body's fields, `depth` levels deep (lists and metadata bookkeeping end a path). */
function patchedFields(body: object, prefix: string, depth: number): string[] {
  const paths: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (prefix === "" && (key === "apiVersion" || key === "kind")) continue;
    if (
      prefix === "metadata." &&
      (key === "resourceVersion" || key === "name" || key === "namespace")
    )
      continue;
    const path = `${prefix}${key}`;
    if (depth > 1 && typeof value === "object" && value !== null && !Array.isArray(value)) {
      const inner = patchedFields(value, `${path}.`, depth - 1);
      paths.push(...(inner.length > 0 ? inner : [path]));
    } else paths.push(path);
  }
  return paths;
}

/** What the checks read of the suite; the suite is started before any check runs. */
export interface ConvergenceSuite {
  readonly options: MachinePoolConformanceOptions;
  /** Which core judges. */
  readonly core: ConformanceCore;
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  readonly monitor: InvariantMonitor;
  /** The started suite (it throws before `start()`); the provider may change between calls. */
  env(): SuiteEnv;
  /** Real core when it judges and its servers have started. */
  realCore(): RealCapiCore | undefined;
  /** What the MachinePool Machines check of a converged pool needs. */
  machinesHost(): MachinesScenarioHost;
}

/**
 * The convergence and steady-state checks of one suite. It remembers the cloud's refused calls at the
 * last steady-state measurement, to tell a provider's retry from churn.
 */
export class PoolConvergence {
  readonly #suite: ConvergenceSuite;
  /** The cloud's refused calls when the provider was last measured at steady state. */
  #failedCallsSeen = 0;

  /** @param suite - what the checks read of the suite */
  constructor(suite: ConvergenceSuite) {
    this.#suite = suite;
  }

  get #timings(): SuiteTimings {
    return suiteTimings(this.#suite.options);
  }

  /**
   * Polls `check` (which returns undefined when satisfied, or the reason it is not) until it passes;
   * stops early on a recorded invariant violation; on timeout throws with the last reason.
   * `timeoutMs` is how long the reason may stay the same: it is scaled by the machine's load
   * ({@link scaled}), and a new reason (the cloud went from 1 to 2 instances) counts as progress and
   * restarts it, up to three times the scaled budget in all. A busy machine that is slow but moving
   * waits; a pool that is stuck fails as soon as on an idle one.
   */
  async until(
    what: string,
    check: () => Promise<string | undefined>,
    timeoutMs = this.#timings.convergeMs,
    pool?: ConformancePool,
  ) {
    const budget = scaled(timeoutMs);
    const started = Date.now();
    const hardDeadline = started + budget * 3;
    let deadline = started + budget;
    let last = "not checked yet";
    let pause = POLL_FIRST_MS;
    for (;;) {
      this.#suite.monitor.assertClean();
      let reason: string;
      try {
        const problem = await check();
        if (problem === undefined) return;
        reason = problem;
      } catch (error) {
        if (error instanceof ConformanceError) throw error;
        reason = error instanceof Error ? error.message : String(error);
      }
      if (reason !== last) {
        deadline = Math.min(hardDeadline, Date.now() + budget);
        pause = POLL_FIRST_MS;
      } else {
        pause = Math.min(POLL_MAX_MS, pause * 2);
      }
      last = reason;
      if (Date.now() > deadline) {
        const [check, ...rest] = last.split(": ");
        // Reasons start with the check they belong to ("status.providerIDsMatchCloud: …").
        const prefixed = /^[a-z]+(\.[A-Za-z]+)?$/.test(check ?? "") && rest.length > 0;
        const named = prefixed ? (check as string) : "converge";
        const message = prefixed ? rest.join(": ") : last;
        const cause = pool ? await this.#rootCause(pool, message) : "";
        const waited = Date.now() - started;
        const budgetNote =
          budget === timeoutMs ? `${timeoutMs} ms` : `${budget} ms, ${timeoutMs} ms scaled by load`;
        throw new ConformanceError(
          named,
          `timed out after ${waited} ms waiting for ${what} (no progress for ${budgetNote}): ${message}${cause}`,
        );
      }
      await sleep(pause);
    }
  }

  /** Why the pool is not converged at `replicas`, or undefined when it is. */
  async notConverged(pool: ConformancePool, replicas: number): Promise<string | undefined> {
    const { client, provider } = this.#suite.env();
    const imp = await client.get(this.#suite.pools, poolKey(pool));
    const mp = await client.get(MachinePools, machinePoolKey(pool));
    const live = [...(await provider.cloud.liveProviderIds(pool))].sort();
    const ids = [...(imp.spec?.providerIDList ?? [])].sort();
    if (live.length !== replicas) {
      return `converge: the cloud has ${live.length} live instances, MachinePool wants ${replicas}`;
    }
    if (JSON.stringify(ids) !== JSON.stringify(live)) {
      return `status.providerIDsMatchCloud: providerIDList ${JSON.stringify(imp.spec?.providerIDList ?? [])} must list exactly the live instances ${JSON.stringify(live)}`;
    }
    if ((imp.status?.replicas ?? 0) !== ids.length) {
      return `status.replicasMatchesProviderIDs: status.replicas ${imp.status?.replicas} must equal providerIDList length ${ids.length}`;
    }
    if (!isProvisioned(imp)) return "converge: the pool is not provisioned (status.ready)";
    const ready = imp.status?.conditions?.find((c) => c.type === "Ready");
    if (!ready) return "conditions.readyAlwaysPresent: the pool has no Ready condition";
    if (ready.status !== "True")
      return `converge: Ready is ${ready.status} (${ready.reason}: ${ready.message ?? ""})`;
    if ((mp.status?.replicas ?? 0) !== replicas) {
      return `converge: core has not copied the pool yet (MachinePool status.replicas ${mp.status?.replicas ?? 0})`;
    }
    // Converged as core sees it: every instance's Node found and Ready (the phase is Running only
    // when the ready Node count equals spec.replicas), and the latest spec observed. Until then
    // core itself still writes the MachinePool, so a steady-state window would catch its writes.
    const status = mp.status as {
      phase?: string;
      observedGeneration?: number;
      nodeRefs?: unknown[];
      deprecated?: { v1beta1?: { readyReplicas?: number } };
    };
    const readyNodes = status.deprecated?.v1beta1?.readyReplicas ?? 0;
    const copied = [...((mp.spec as { providerIDList?: string[] }).providerIDList ?? [])].sort();
    if (JSON.stringify(copied) !== JSON.stringify(ids)) {
      return `converge: core has not copied the pool's providerIDList into the MachinePool yet (${copied.length} of ${ids.length} IDs match)`;
    }
    if (status.phase !== "Running" || (status.nodeRefs?.length ?? 0) !== replicas) {
      return `converge: core reports the MachinePool ${status.phase ?? "without a phase"} with ${status.nodeRefs?.length ?? 0} Node references and ${readyNodes} ready Nodes of ${replicas}`;
    }
    if (status.observedGeneration !== mp.metadata?.generation) {
      return `converge: core has not observed generation ${mp.metadata?.generation} of the MachinePool yet (observedGeneration ${status.observedGeneration})`;
    }
    // MachinePool Machines: converged once core's Machines are there and Ready, each for one instance.
    if (this.#suite.options.kind.machine) return machinesProblem(this.#suite.machinesHost(), pool);
    return undefined;
  }

  async converged(pool: ConformancePool, replicas: number, timeoutMs?: number): Promise<void> {
    await this.until(
      `${pool.name} to converge at ${replicas} replicas`,
      () => this.notConverged(pool, replicas),
      timeoutMs,
      pool,
    );
  }

  /**
   * What the pool itself says is wrong, for a timeout message: its `Ready` condition when not True
   * (the provider's own reason: a stopped runaway, a cloud failure), and providerIDs that several
   * live instances share. Empty when the message already says it or nothing more is known.
   */
  async #rootCause(pool: ConformancePool, message: string): Promise<string> {
    const parts: string[] = [];
    try {
      const imp = await this.#suite.env().client.get(this.#suite.pools, poolKey(pool));
      const ready = imp.status?.conditions?.find((c) => c.type === "Ready");
      if (ready && ready.status !== "True" && !message.includes(`(${ready.reason}`)) {
        parts.push(
          `the pool reports Ready=${ready.status} (${ready.reason}${ready.message ? `: ${ready.message}` : ""})`,
        );
      }
    } catch {
      // The pool is gone: the message says what was waited for.
    }
    // On real core, its latest errors about the pool's objects (Machines included) often name the cause.
    const realCore = this.#suite.realCore();
    if (realCore) {
      const recent = realCore
        .reconcileErrors({ namespace: NAMESPACE })
        .filter((e) => e.name.startsWith(pool.name) && Date.now() - e.at.getTime() < 30_000)
        .slice(-2);
      for (const e of recent)
        parts.push(`core's ${e.controller} controller failed ${e.kind} ${e.name}: ${e.error}`);
    }
    const live = await Promise.resolve(
      this.#suite.env().provider.cloud.liveProviderIds(pool),
    ).catch(() => [] as string[]);
    const shared = [...new Set(live.filter((id, i) => live.indexOf(id) !== i))];
    if (shared.length > 0) {
      parts.push(
        `status.providerIDsUnique: several live instances report the providerID ${shared.slice(0, 3).join(", ")}`,
      );
    }
    return parts.length > 0 ? `; ${parts.join("; ")}` : "";
  }

  /** Writes by anyone but the suite itself (leases excluded: leader election renews them). */
  writesSince(since: number): RequestRecord[] {
    return this.#suite
      .env()
      .api.requests()
      .filter(
        (r) =>
          r.startedAt.getTime() >= since &&
          !READS.has(r.verb) &&
          r.fieldManager !== FIELD_MANAGER &&
          r.resource !== "leases" &&
          r.status < 400,
      );
  }

  /**
   * `steadyState.zeroWrites`: with nothing changing, the provider writes nothing and changes nothing
   * in the cloud. Only the provider's writes count (by {@link ConformanceProvider.identity}): core and
   * its topology controller may write their own objects in the window (real core's capi-topology
   * refreshed the suite's stand-in objects there), and a provider that makes core keep writing never
   * gets quiet before the window. A failure names the provider's writes, and counts the others' by
   * writer.
   *
   * A provider retries a cloud call the cloud refused after a delay of its own, and the pool may look
   * converged meanwhile (Ready stays True through a short throttle): when the cloud reports refused
   * calls since the provider was last measured quiet, a window that catches writes or cloud changes is
   * measured again, up to 3 times. A provider that keeps writing fails on
   * the last one.
   */
  async steadyState(pool: ConformancePool, replicas: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const cloud = this.#suite.env().provider.cloud;
      const problem = await this.#measureSteadyState(pool, replicas);
      const failed = cloud.failedCallCount?.();
      const retrying = failed !== undefined && failed > this.#failedCallsSeen;
      if (failed !== undefined) this.#failedCallsSeen = failed;
      if (!problem) return;
      if (!retrying || attempt >= STEADY_STATE_ATTEMPTS) {
        const after =
          attempt > 1
            ? ` (measured ${attempt} times: cloud calls the cloud refused were being retried)`
            : "";
        throw new ConformanceError(problem.check, `${problem.message}${after}`);
      }
    }
  }

  /** One steady-state measurement: converged, quiet, then a window without the provider's writes. */
  async #measureSteadyState(
    pool: ConformancePool,
    replicas: number,
  ): Promise<{ check: string; message: string } | undefined> {
    await this.converged(pool, replicas);
    await sleep(this.#timings.settleMs);
    // Converged is what the suite can see; the provider may still be finishing the reconcile that got
    // there (an Event, a last status patch), and real core's Cluster controller sums the pools up into
    // the Cluster's status a rate-limited reconcile later: wait until nobody writes, then measure.
    await this.quiet(pool);
    const since = Date.now();
    const mutating = this.#suite.env().provider.cloud.callCount({ mutating: true });
    await sleep(this.#timings.steadyStateMs);
    const identity = this.#suite.env().provider.identity;
    const writes = this.writesSince(since);
    const own = writes.filter((w) => writtenBy(w, identity));
    if (own.length > 0) {
      const list = own.slice(0, 5).map(describeWrite).join("; ");
      const others = writersOf(writes.filter((w) => !writtenBy(w, identity)));
      return {
        check: "steadyState.zeroWrites",
        message: `expected 0 API writes by the provider (${identity}) at steady state (${pool.name}, ${replicas} replicas), got ${own.length} in ${this.#timings.steadyStateMs} ms: ${list}${others ? `; other writers in the window: ${others}` : ""}`,
      };
    }
    const changes = this.#suite.env().provider.cloud.callCount({ mutating: true }) - mutating;
    if (changes > 0) {
      return {
        check: "steadyState.noCloudChanges",
        message: `expected no mutating cloud calls at steady state (${pool.name}), got ${changes}`,
      };
    }
    return undefined;
  }

  /**
   * With MachinePool Machines, core's Machine controller goes on writing its Machines for a while after
   * the pool converged (conditions it computes from the Node, the InfraMachine and its own clock), and
   * real core's Cluster controller writes the Cluster's status after its pools changed: wait until
   * nobody but the suite has written for 2 s there (1 s against the emulator; `settleMs`, if longer).
   * A provider that keeps writing, or that makes core keep writing, never gets quiet and fails here
   * with the writes it made.
   */
  async quiet(pool: ConformancePool): Promise<void> {
    // Core's Machine writes come in bursts a second or more apart (and the audit log trails them);
    // the emulator and a provider finishing a reconcile write within one busy-machine pause.
    const windowMs = Math.max(
      this.#timings.settleMs,
      this.#suite.options.kind.machine || this.#suite.core === "real"
        ? MACHINES_QUIET_MS
        : EMULATOR_QUIET_MS,
    );
    await this.until(`writes around ${pool.name} to settle`, async () => {
      const writes = this.writesSince(Date.now() - windowMs);
      if (writes.length === 0) return undefined;
      const list = writes.slice(-3).map(describeWrite).join("; ");
      return `steadyState.zeroWrites: ${writes.length} writes in the last ${windowMs} ms after convergence: ${list}`;
    });
  }
}
