/**
 * The chaos suite: two example-provider replicas as separate OS processes share one fake cloud (over
 * {@link CloudRpcServer}) and one API server, and faults are played one after another: a leader frozen
 * (SIGSTOP) past its lease in the middle of a reconcile, SIGTERM with a cloud call in flight, SIGKILL,
 * API server 5xx/429/latency/dropped connections and restarts. Every step asserts the InfraMachinePool
 * invariants (`providers.md` §6.4: sorted unique providerIDList equal to the live instances,
 * `status.replicas` equal to its length and to `spec.replicas` at rest, provisioned never back to
 * false), that cloud mutations equal what a fault-free run needs for the same change (no duplicated
 * side effect), that cloud effects never interleave between two leaders, and that nothing leaks.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { KubeClient, LeaseResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  type ConformancePoolObject,
  capiCrdsFolder,
  InvariantMonitor,
  markWorkloadClusterReady,
  startApiServer,
  startCapiCore,
  startControlPlane,
} from "@capi-ts/testing";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { FakeScalingCloud, RealClock } from "../cloud/index.js";
import { resourceName } from "../provider/driver.js";
import { FakeCloudMachinePool } from "../provider/kind.js";
import { CloudRpcServer } from "./rpc.js";
import { CHAOS_LEASE_MS } from "./timings.js";

/** A fault the suite can play. */
export type ChaosFault =
  | "none"
  | "sigstop-past-lease"
  | "sigterm-mid-cloud-call"
  | "sigkill-leader"
  | "apiserver-5xx"
  | "apiserver-429"
  | "apiserver-latency"
  | "apiserver-dropped-connections"
  | "apiserver-restart"
  | "etcd-pause";

/** One row of the result table. */
export interface ChaosRow {
  /** The fault and the API server it ran on. */
  fault: string;
  /** The replica change the step asked for. */
  change: string;
  /** From the change to a converged pool, ms. */
  convergeMs: number;
  /** Successful mutating cloud calls of the step. */
  mutations: number;
  /** What a fault-free run needs for the same change. */
  needed: number;
  /** Distinct managers whose calls changed the cloud during the step, in order. */
  leaders: string[];
  /** Live cloud instances beyond the desired ones once converged (0), or resources left at the end. */
  leaks: number;
  /** Broken invariants seen during the step. */
  violations: string[];
}

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** Faults to play on the in-memory API server, in order (default: all of them). */
  faults?: readonly ChaosFault[];
  /** Also run `apiserver-restart` on a real kube-apiserver + etcd (needs the control plane binaries). */
  realControlPlane?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Per-step convergence bound, ms (default 60 s). */
  stepTimeoutMs?: number;
}

type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; replicas?: number };
  status?: Record<string, unknown> & { replicas?: number; ready?: boolean };
};

const NAMESPACE = "default";
const CLUSTER = "chaos";
const POOL = "chaos-pool";
const GROUP = resourceName({ namespace: NAMESPACE, name: POOL, clusterName: CLUSTER, uid: "" });
const Pools: ResourceDescriptor<Obj> = {
  group: FakeCloudMachinePool.group,
  version: FakeCloudMachinePool.storageVersion,
  kind: FakeCloudMachinePool.kind,
  plural: FakeCloudMachinePool.plural,
  scope: "Namespaced",
};
const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Obj>;
const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;
const KubeadmConfigs: ResourceDescriptor<Obj> = {
  group: "bootstrap.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "KubeadmConfig",
  plural: "kubeadmconfigs",
  scope: "Namespaced",
};
const MANAGER_ENTRY = resolve(import.meta.dirname, "manager-process.ts");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The cluster side of a bed: the in-memory server or a real one. */
interface ClusterUnderTest {
  kubeConfig: KubeConfig;
  writeKubeconfig(path: string): Promise<void>;
  restart(): Promise<void>;
  /** Freezes etcd for `ms` (real control plane only). */
  pauseEtcd?(ms: number): Promise<void>;
  inject?(fault: ChaosFault): () => void;
  stop(): Promise<void>;
  name: string;
}

class Replica {
  child: ChildProcess;
  exited: Promise<number | null>;
  constructor(
    readonly identity: string,
    env: NodeJS.ProcessEnv,
  ) {
    this.child = spawn(
      process.execPath,
      ["--conditions=capi-ts-source", "--import", "tsx", MANAGER_ENTRY],
      {
        env: { ...process.env, ...env, CHAOS_IDENTITY: identity },
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    this.exited = new Promise((done) => this.child.once("exit", (code) => done(code)));
  }
  signal(name: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(name);
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
}

class Bed {
  readonly cloud = new FakeScalingCloud({
    clock: new RealClock({ speed: 20 }),
    seed: 7,
    timing: { lingerMs: 1000 },
  });
  readonly rpc = new CloudRpcServer(this.cloud);
  readonly monitor = new InvariantMonitor();
  readonly replicas = new Map<string, Replica>();
  private generation = 0;
  private env: NodeJS.ProcessEnv = {};
  private dir = "";
  private watching = false;
  private watcher: Promise<void> | undefined;
  readonly client: KubeClient;
  private stopCore: () => Promise<void> = async () => undefined;

  constructor(readonly cluster: ClusterUnderTest) {
    this.client = new KubeClient(cluster.kubeConfig, { fieldManager: "chaos-user" });
  }

  async start(): Promise<void> {
    const url = await this.rpc.start();
    this.dir = await mkdtemp(join(tmpdir(), "capi-ts-chaos-"));
    const kubeconfig = join(this.dir, "kubeconfig");
    await this.cluster.writeKubeconfig(kubeconfig);
    this.env = { CHAOS_KUBECONFIG: kubeconfig, CHAOS_CLOUD_URL: url };
    const core = await startCapiCore({ kubeConfig: this.cluster.kubeConfig, machinePools: true });
    this.stopCore = () => core.stop();
    this.spawnReplica();
    this.spawnReplica();
    await this.createPool(2);
    this.watching = true;
    this.watcher = (async () => {
      while (this.watching) {
        const pool = await this.client
          .get(Pools, { namespace: NAMESPACE, name: POOL })
          .catch(() => undefined);
        if (pool) this.monitor.observe(pool as ConformancePoolObject);
        await sleep(100);
      }
    })();
  }

  spawnReplica(): Replica {
    const identity = `replica-${String.fromCharCode(97 + this.generation++)}`;
    const replica = new Replica(identity, this.env);
    this.replicas.set(identity, replica);
    return replica;
  }

  /** The lease holder, once one holds it. */
  async leader(): Promise<Replica> {
    for (;;) {
      const lease = await this.client
        .get(LeaseResource, { namespace: NAMESPACE, name: "fakecloud-provider-leader-election" })
        .catch(() => undefined);
      const holder = (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
      const replica = holder ? this.replicas.get(holder) : undefined;
      if (replica?.running) return replica;
      await sleep(100);
    }
  }

  /** Keeps two replicas running (replacing exited ones, as a Deployment would). */
  topUp(): void {
    for (const [identity, replica] of this.replicas) {
      if (!replica.running) this.replicas.delete(identity);
    }
    while ([...this.replicas.values()].filter((r) => r.running).length < 2) this.spawnReplica();
  }

  async setReplicas(replicas: number): Promise<void> {
    await this.client.mergePatch(
      MachinePools,
      { namespace: NAMESPACE, name: POOL },
      {
        spec: { replicas },
      },
    );
  }

  /** Converged: Ready, the live instances are the list, counts agree. Returns problems, or [] once converged. */
  async converged(replicas: number): Promise<boolean> {
    const pool = await this.client.get(Pools, { namespace: NAMESPACE, name: POOL });
    const live = this.cloud.inspect
      .instances({ group: GROUP })
      .filter((i) => i.state !== "terminated" && i.state !== "terminating");
    const ids = this.cloud.inspect.providerIds(GROUP);
    const ready = (pool.status?.conditions as { type: string; status: string }[] | undefined)?.find(
      (c) => c.type === "Ready",
    );
    return (
      ready?.status === "True" &&
      live.length === replicas &&
      live.every((i) => i.state === "running") &&
      JSON.stringify(pool.spec?.providerIDList ?? []) === JSON.stringify([...ids].sort()) &&
      pool.status?.replicas === replicas
    );
  }

  async waitConverged(replicas: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await this.converged(replicas).catch(() => false))) {
      if (Date.now() > deadline) {
        const pool = await this.client
          .get(Pools, { namespace: NAMESPACE, name: POOL })
          .catch(() => undefined);
        const instances = this.cloud.inspect
          .instances({ group: GROUP })
          .map((i) => `${i.id}:${i.state}`)
          .join(" ");
        const replicasUp = [...this.replicas.values()]
          .map((r) => `${r.identity}:${r.running ? "running" : "exited"}`)
          .join(" ");
        throw new Error(
          `the pool did not converge at ${replicas} replicas within ${timeoutMs} ms: pool status ${JSON.stringify(pool?.status)}, list ${JSON.stringify(pool?.spec?.providerIDList)}; cloud ${instances}; replicas ${replicasUp}; last cloud calls ${this.rpc.effects
            .slice(-8)
            .map((e) => `${e.caller}:${e.op}:${e.ok}`)
            .join(", ")}`,
        );
      }
      await sleep(100);
    }
  }

  /** Live instances that are not in the pool's list (leaked or doubled). */
  async strayInstances(): Promise<number> {
    const pool = await this.client.get(Pools, { namespace: NAMESPACE, name: POOL });
    const listed = new Set(pool.spec?.providerIDList ?? []);
    const live = this.cloud.inspect
      .instances()
      .filter((i) => i.state !== "terminated" && i.state !== "terminating");
    return live.filter((i) => !listed.has(i.providerID)).length;
  }

  private async createPool(replicas: number): Promise<void> {
    await this.client.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE },
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevCluster",
          name: CLUSTER,
        },
      },
    });
    await markWorkloadClusterReady(
      this.client,
      { namespace: NAMESPACE, name: CLUSTER },
      this.cluster.kubeConfig,
    );
    await this.client.create(KubeadmConfigs, {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata: { name: POOL, namespace: NAMESPACE },
      spec: { format: "cloud-config" },
    });
    await this.client.create(Pools, {
      apiVersion: FakeCloudMachinePool.apiVersion,
      kind: FakeCloudMachinePool.kind,
      metadata: { name: POOL, namespace: NAMESPACE },
      spec: { instanceType: "small", minSize: 0, maxSize: 10 },
    });
    await this.client.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name: POOL, namespace: NAMESPACE },
      spec: {
        clusterName: CLUSTER,
        replicas,
        template: {
          spec: {
            clusterName: CLUSTER,
            version: "v1.34.1",
            bootstrap: {
              configRef: {
                apiGroup: "bootstrap.cluster.x-k8s.io",
                kind: "KubeadmConfig",
                name: POOL,
              },
            },
            infrastructureRef: {
              apiGroup: FakeCloudMachinePool.group,
              kind: FakeCloudMachinePool.kind,
              name: POOL,
            },
          },
        },
      },
    });
    await this.waitConverged(replicas, 60_000);
  }

  /** Deletes the pool and reports what the cloud still holds once the provider is done. */
  async deleteAndCountLeaks(
    timeoutMs: number,
  ): Promise<{ ms: number; leaks: number; mutations: number; leaders: string[] }> {
    const from = this.rpc.effects.length;
    const started = Date.now();
    await this.client.delete(MachinePools, { namespace: NAMESPACE, name: POOL });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pool = await this.client
        .get(Pools, { namespace: NAMESPACE, name: POOL })
        .catch(() => undefined);
      if (!pool) break;
      if (Date.now() > deadline) throw new Error("the pool was not deleted in time");
      await sleep(100);
    }
    const ms = Date.now() - started;
    const live = this.cloud.inspect
      .instances()
      .filter((i) => i.state !== "terminated" && i.state !== "terminating").length;
    const leaks = live + this.cloud.inspect.groups().length + this.cloud.inspect.templates().length;
    const effects = this.rpc.mutations(from);
    return { ms, leaks, mutations: effects.length, leaders: leadersOf(effects).leaders };
  }

  async stop(): Promise<void> {
    this.watching = false;
    await this.watcher;
    for (const replica of this.replicas.values()) replica.signal("SIGKILL");
    await Promise.all([...this.replicas.values()].map((replica) => replica.exited));
    await this.stopCore();
    await this.rpc.stop();
    await this.cluster.stop();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

/** Callers in order of their first successful mutation; "interleaved" if one came back after another. */
function leadersOf(effects: readonly { caller: string }[]): {
  leaders: string[];
  interleaved: boolean;
} {
  const leaders: string[] = [];
  let interleaved = false;
  for (const effect of effects) {
    if (leaders.at(-1) === effect.caller) continue;
    if (leaders.includes(effect.caller)) interleaved = true;
    leaders.push(effect.caller);
  }
  return { leaders, interleaved };
}

/** Plays one fault on the leader around a replica change; returns the row. */
async function step(
  bed: Bed,
  fault: ChaosFault,
  from: number,
  to: number,
  needed: number | undefined,
  timeoutMs: number,
): Promise<ChaosRow> {
  bed.topUp();
  const leader = await bed.leader();
  const mark = bed.rpc.effects.length;
  const violationsBefore = bed.monitor.violations().length;
  let release: (() => void) | undefined;
  let undo: (() => void) | undefined;
  const holds: Promise<void>[] = [];
  // How the faulted leader must end: exit 1 on lost leadership, 0 after SIGTERM, killed.
  let expectedExit: number | "killed" | undefined;
  switch (fault) {
    case "sigstop-past-lease": {
      // Freeze the leader as its group read is answered once the change is written (the read the
      // reconcile scales on), past its lease, then resume it with the answer in hand: it must
      // not act on it (the new leader has).
      let armed = false;
      release = () => {
        armed = true;
      };
      bed.rpc.hold = ({ op, caller }) => {
        if (!armed || caller !== leader.identity || op !== "describeGroup") return undefined;
        armed = false;
        leader.signal("SIGSTOP");
        // The answer is sent at once and waits in the frozen process's socket, as after a GC pause.
        holds.push(
          (async () => {
            await sleep(CHAOS_LEASE_MS * 2.5);
            leader.signal("SIGCONT");
          })(),
        );
        return undefined;
      };
      expectedExit = 1;
      break;
    }
    case "sigterm-mid-cloud-call": {
      // The leader's first mutating call of the change takes 3 s; SIGTERM arrives 200 ms into it
      // (grace 1 s). The call lands; no one may act beside it or repeat it.
      let armed = true;
      bed.rpc.hold = ({ caller, mutating }) => {
        if (!armed || caller !== leader.identity || !mutating) return undefined;
        armed = false;
        setTimeout(() => leader.signal("SIGTERM"), 200);
        const hold = sleep(3000);
        holds.push(hold);
        return hold;
      };
      expectedExit = 0;
      break;
    }
    case "sigkill-leader": {
      let armed = true;
      bed.rpc.hold = ({ caller, mutating }) => {
        if (!armed || caller !== leader.identity || !mutating) return undefined;
        armed = false;
        leader.signal("SIGKILL");
        return sleep(100);
      };
      expectedExit = "killed";
      break;
    }
    case "apiserver-restart":
      release = () => void bed.cluster.restart();
      break;
    case "etcd-pause": {
      // etcd frozen past the lease: the leader cannot renew, must stop acting (and exit), and only
      // one replica may change the cloud once storage answers again.
      const pauseEtcd = bed.cluster.pauseEtcd;
      if (!pauseEtcd) throw new Error("etcd-pause needs the real control plane (etcd)");
      release = () => {
        holds.push(pauseEtcd(CHAOS_LEASE_MS * 2.5));
      };
      break;
    }
    case "none":
      break;
    default:
      // Injected right after the change is written (the change itself is the user's, not faulted).
      release = () => {
        undo = bed.cluster.inject?.(fault);
      };
  }
  const started = Date.now();
  await bed.setReplicas(to);
  release?.();
  try {
    await bed.waitConverged(to, timeoutMs);
  } finally {
    bed.rpc.hold = undefined;
    undo?.();
  }
  const convergeMs = Date.now() - started;
  // Late effects: a fenced process that woke up, or a call that was still in flight.
  await Promise.all(holds);
  const exitProblems: string[] = [];
  if (expectedExit !== undefined) {
    const code = await Promise.race([leader.exited, sleep(15_000).then(() => "running" as const)]);
    const seen = leader.child.signalCode === "SIGKILL" ? "killed" : code;
    if (seen !== expectedExit) {
      exitProblems.push(
        `the faulted leader ended ${String(seen)}, expected ${String(expectedExit)}`,
      );
    }
  }
  await sleep(CHAOS_LEASE_MS);
  const effects = bed.rpc.mutations(mark);
  const { leaders } = leadersOf(effects);
  // Judged over the whole run: a replica superseded by another must never change the cloud again.
  const history = bed.rpc.mutations(0);
  const succession = leadersOf(history);
  const interleaved =
    succession.interleaved &&
    !leadersOf(history.slice(0, history.length - effects.length)).interleaved;
  const violations = [
    ...exitProblems,
    ...bed.monitor
      .violations()
      .slice(violationsBefore)
      .map((violation) => violation.message),
  ];
  if (interleaved) {
    violations.push(
      `a superseded leader changed the cloud again: ${succession.leaders.join(" → ")}`,
    );
  }
  if (!(await bed.converged(to)))
    violations.push("the pool did not stay converged after the fault");
  const mutations = effects.length;
  const required = needed ?? mutations;
  if (mutations !== required) {
    violations.push(
      `${mutations} cloud mutations for ${required} needed: ${effects.map((e) => `${e.caller}:${e.op}`).join(", ")}`,
    );
  }
  return {
    fault: `${fault} (${bed.cluster.name})`,
    change: `${from}→${to}`,
    convergeMs,
    mutations,
    needed: required,
    leaders,
    leaks: await bed.strayInstances(),
    violations,
  };
}

function inMemoryFaults(api: Awaited<ReturnType<typeof startApiServer>>) {
  return (fault: ChaosFault): (() => void) => {
    const rule =
      fault === "apiserver-5xx"
        ? { status: 503, probability: 0.3 }
        : fault === "apiserver-429"
          ? { status: 429, retryAfterSeconds: 1, probability: 0.3 }
          : fault === "apiserver-latency"
            ? { latencyMs: 800, probability: 0.5 }
            : { dropConnection: true, probability: 0.2 };
    // Faults on what the provider does (reads, writes, the Lease), not on the watch streams.
    const handle = api.faults.add({ ...rule, verb: ["get", "list", "create", "update", "patch"] });
    return () => handle.remove();
  };
}

/**
 * Runs the chaos suite and returns one row per step, plus a final `delete` row (leaks = cloud groups,
 * templates and live instances left). Throws only on setup failure or a step that never converges;
 * broken invariants are in the rows' `violations`.
 *
 * @example
 * ```ts
 * const rows = await runChaos({ faults: ["sigkill-leader", "apiserver-5xx"] });
 * console.table(rows);
 * ```
 */
export async function runChaos(options: ChaosOptions = {}): Promise<ChaosRow[]> {
  const log = options.log ?? (() => undefined);
  const timeoutMs = options.stepTimeoutMs ?? 60_000;
  const faults = options.faults ?? [
    "sigstop-past-lease",
    "sigterm-mid-cloud-call",
    "sigkill-leader",
    "apiserver-5xx",
    "apiserver-429",
    "apiserver-latency",
    "apiserver-dropped-connections",
    "apiserver-restart",
  ];
  const rows: ChaosRow[] = [];
  const api = await startApiServer();
  await api.installCRDs([capiCrdsFolder]);
  await api.installCRDs([FakeCloudMachinePool.crd]);
  const bed = new Bed({
    name: "in-memory",
    kubeConfig: api.kubeConfig,
    writeKubeconfig: (path) => api.writeKubeconfig(path),
    restart: () => api.restart(),
    inject: inMemoryFaults(api),
    stop: () => api.stop(),
  });
  try {
    await bed.start();
    log("in-memory API server, CAPI core emulator, shared fake cloud, 2 replicas: pool at 2");
    // A fault-free scale up and down: the mutations each direction needs.
    const up = await step(bed, "none", 2, 4, undefined, timeoutMs);
    rows.push(up);
    const down = await step(bed, "none", 4, 2, undefined, timeoutMs);
    rows.push(down);
    let current = 2;
    for (const fault of faults) {
      const to = current === 2 ? 4 : 2;
      const needed = to > current ? up.mutations : down.mutations;
      log(`${fault}: ${current} → ${to}`);
      rows.push(await step(bed, fault, current, to, needed, timeoutMs));
      current = to;
    }
    const deletion = await bed.deleteAndCountLeaks(timeoutMs);
    rows.push({
      fault: "delete (in-memory)",
      change: `${current}→0`,
      convergeMs: deletion.ms,
      mutations: deletion.mutations,
      needed: deletion.mutations,
      leaders: deletion.leaders,
      leaks: deletion.leaks,
      violations: deletion.leaks > 0 ? [`${deletion.leaks} cloud resources left`] : [],
    });
  } finally {
    await bed.stop();
  }
  if (options.realControlPlane) {
    const plane = await startControlPlane();
    await plane.installCRDs([capiCrdsFolder]);
    await plane.installCRDs([FakeCloudMachinePool.crd]);
    const real = new Bed({
      name: "kube-apiserver",
      kubeConfig: plane.kubeConfig,
      writeKubeconfig: (path) => plane.writeKubeconfig(path),
      restart: () => plane.restart(),
      pauseEtcd: (ms) => plane.pauseEtcd(ms),
      stop: () => plane.stop(),
    });
    try {
      await real.start();
      log("real kube-apiserver + etcd: pool at 2");
      const up = await step(real, "none", 2, 4, undefined, timeoutMs);
      rows.push(up);
      const down = await step(real, "none", 4, 2, undefined, timeoutMs);
      rows.push(down);
      rows.push(await step(real, "apiserver-restart", 2, 4, up.mutations, timeoutMs));
      rows.push(await step(real, "sigkill-leader", 4, 2, down.mutations, timeoutMs));
      rows.push(await step(real, "etcd-pause", 2, 4, up.mutations, timeoutMs));
      const deletion = await real.deleteAndCountLeaks(timeoutMs);
      rows.push({
        fault: "delete (kube-apiserver)",
        change: "4→0",
        convergeMs: deletion.ms,
        mutations: deletion.mutations,
        needed: deletion.mutations,
        leaders: deletion.leaders,
        leaks: deletion.leaks,
        violations: deletion.leaks > 0 ? [`${deletion.leaks} cloud resources left`] : [],
      });
    } finally {
      await real.stop();
    }
  }
  return rows;
}

/** The result table as text: fault, change, time to converge, mutations vs needed, leaders, leaks. */
export function formatChaosTable(rows: readonly ChaosRow[]): string {
  const header = [
    "fault",
    "change",
    "converge",
    "cloud mutations/needed",
    "leaders seen",
    "leaks",
    "holds",
  ];
  const lines = rows.map((row) => [
    row.fault,
    row.change,
    `${(row.convergeMs / 1000).toFixed(1)} s`,
    `${row.mutations}/${row.needed}`,
    row.leaders.join("→") || "-",
    String(row.leaks),
    row.violations.length === 0 ? "yes" : `NO: ${row.violations.join("; ")}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? "").length)));
  const format = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [
    format(header),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...lines.map(format),
  ].join("\n");
}
