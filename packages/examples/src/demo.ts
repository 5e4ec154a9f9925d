/**
 * `./dev demo`: the example provider end to end, with live progress a person can follow.
 *
 * By default everything runs in this process: the in-memory API server with the CAPI CRDs, the CAPI
 * core emulator (with its bootstrap stand-in), the fake cloud on a sped-up clock with a kubelet that
 * registers Nodes, and the `FakeCloudMachinePool` provider.
 * - `--core real`: a real kube-apiserver + etcd with real CAPI core (its controllers and webhooks,
 *   the release the SDK targets), built on first use by `./dev controlplane --capi`.
 * - `--kubeconfig <file>`: a cluster that runs CAPI core (as `clusterctl init` installs it); with
 *   `--core emulator` the emulator plays core there instead (the cluster then needs only the CRDs).
 * - `--cloud aws`: the AWS reference provider (`ASGMachinePool`) on the AWS SDK against moto's server
 *   (installed on first use by `./dev moto --install`), instead of the fake cloud.
 * In every mode the bootstrap stand-in plays the kubeadm bootstrap provider for the demo's own
 * KubeadmConfig, and the workload cluster is the cluster itself (its kubeconfig in `demo-kubeconfig`).
 *
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { DescribeAutoScalingGroupsCommand } from "@aws-sdk/client-auto-scaling";
import { DescribeLaunchTemplatesCommand } from "@aws-sdk/client-ec2";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { KubeClient, NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  type CapiCore,
  capiCrdsFolder,
  capiRelease,
  findCapiCoreBinary,
  findControlPlaneBinaries,
  kubeletStandIn,
  markWorkloadClusterReady,
  startApiServer,
  startCapiCore,
  startControlPlane,
} from "@capi-ts/testing";
import { ApiextensionsV1Api, KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import {
  ASGMachinePool,
  asgResourceName,
  findMoto,
  followMotoInstances,
  MOTO_INSTALL_COMMAND,
  startAsgProvider,
  startMotoTestBed,
} from "./aws/index.js";
import { bootstrapTokenCheck, FakeScalingCloud, nodeRegistrar, RealClock } from "./cloud/index.js";
import {
  FakeCloudMachinePool,
  fakeCloudKind,
  resourceName,
  startFakeCloudProvider,
} from "./provider/index.js";

const NAMESPACE = "default";
const CLUSTER = "demo";
const POOL = "demo-pool";
const POOL_ID = { namespace: NAMESPACE, name: POOL, clusterName: CLUSTER, uid: "" };
const SPEED = 20;
const PHASE_TIMEOUT_MS = 20_000;

type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; replicas?: number };
  status?: Record<string, unknown> & {
    replicas?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
};

const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Obj>;
const Machines = clusterv1beta2.MachineResource;
const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;
const KubeadmConfigs: ResourceDescriptor<Obj> = {
  group: "bootstrap.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "KubeadmConfig",
  plural: "kubeadmconfigs",
  scope: "Namespaced",
  subresources: { status: true },
};

const started = Date.now();
const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;
const say = (line: string): void => void process.stdout.write(`${elapsed()}  ${line}\n`);
const heading = (title: string): void => void process.stdout.write(`\n== ${title} ==\n`);

type CoreChoice = "emulator" | "real";
type CloudChoice = "fake" | "aws";

interface DemoArgs {
  kubeconfig?: string;
  core?: CoreChoice;
  cloud?: CloudChoice;
  machinePoolMachines?: boolean;
}

/** The provider's kind, as far as the demo needs it. */
type DemoKind = Pick<
  typeof ASGMachinePool,
  "group" | "storageVersion" | "kind" | "plural" | "apiVersion" | "crd" | "crdName"
>;

/** What the demo reads of the cloud behind the provider, and how it stops it. */
interface DemoCloud {
  /** providerIDs of the pool's live instances, sorted. */
  providerIds(): Promise<string[]>;
  /** The pool's live instances: state and template version. */
  instances(): Promise<{ state: string; version: string }[]>;
  /** How many template versions the pool has had. */
  templateVersions(): Promise<number>;
  /** The template version of the pool's group. */
  groupVersion(): Promise<string | undefined>;
  /** The provider's cloud calls so far. */
  calls(): { total: number; mutating: number };
  /** Groups and templates left in the cloud. */
  left(): Promise<{ groups: number; templates: number }>;
  stop(): Promise<void>;
}

/** One cloud the demo runs on: the provider's kind, a pool of it, and how to start both. */
interface DemoTarget {
  kind: DemoKind;
  poolSpec: Record<string, unknown>;
  change: { from: string; to: string; patch: Record<string, unknown> };
  provider: string;
  start(kubeConfig: KubeConfig, machinePoolMachines: boolean): Promise<DemoCloud>;
}

const USAGE = `usage: ./dev demo [--core emulator|real] [--kubeconfig FILE] [--cloud fake|aws] [--machine-pool-machines]
  (no flags)             in-memory API server, CAPI core emulator
  --core real            real kube-apiserver + etcd + CAPI core ${capiRelease()} with its webhooks
                         (built by ./dev controlplane --capi on first use; needs Go)
  --kubeconfig FILE      a cluster running CAPI core (clusterctl init); the demo adds its CRD
  --kubeconfig FILE --core emulator
                         a cluster with only the CAPI CRDs; the emulator plays core there
  --cloud aws            the AWS reference provider (ASGMachinePool, AWS SDK v3) against moto's
                         server instead of the fake cloud (moto installed by ./dev moto on first use)
  --machine-pool-machines
                         MachinePool Machines: an InfraMachine per instance, a Machine for each,
                         instances deleted through their Machine (core drains the Node first)
`;

function parseArgs(argv: string[]): DemoArgs {
  const out: DemoArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--kubeconfig") {
      const file = argv[++i];
      if (!file)
        throw new Error("--kubeconfig needs a file: ./dev demo --kubeconfig ~/.kube/config");
      out.kubeconfig = file;
    } else if (arg === "--core") {
      const core = argv[++i];
      if (core !== "emulator" && core !== "real")
        throw new Error(`--core takes "emulator" or "real", not ${JSON.stringify(core)}\n${USAGE}`);
      out.core = core;
    } else if (arg === "--cloud") {
      const cloud = argv[++i];
      if (cloud !== "fake" && cloud !== "aws")
        throw new Error(`--cloud takes "fake" or "aws", not ${JSON.stringify(cloud)}\n${USAGE}`);
      out.cloud = cloud;
    } else if (arg === "--machine-pool-machines") {
      out.machinePoolMachines = true;
    } else if (arg === "--help" || arg === "-h") {
      process.stdout.write(USAGE);
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
    }
  }
  if (out.cloud === "aws" && out.machinePoolMachines) {
    throw new Error(
      "--machine-pool-machines runs on the fake cloud only (ASGMachinePool has no InfraMachine kind)",
    );
  }
  if (out.kubeconfig && out.core === "real") {
    throw new Error(
      "--core real starts its own control plane; with --kubeconfig the cluster's own CAPI core is used (or --core emulator)",
    );
  }
  return out;
}

/** Builds real CAPI core with Go on first use, printing a progress line while Go works. */
async function ensureRealCore(): Promise<void> {
  const binaries = findControlPlaneBinaries();
  if (binaries && findCapiCoreBinary(binaries)) return;
  const script = resolve(
    import.meta.dirname,
    "..",
    "..",
    "..",
    "tools",
    "controlplane",
    "build.sh",
  );
  if (!existsSync(script)) {
    throw new Error(
      "--core real needs kube-apiserver, etcd and CAPI's manager; build them in the capi-ts repository with ./dev controlplane --capi",
    );
  }
  say(
    `building kube-apiserver, etcd and CAPI core ${capiRelease()} with Go (first use only; the first build takes several minutes)`,
  );
  const build = spawn("bash", [script, "--capi"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  build.stderr.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  const ticker = setInterval(() => say("  … still building (Go)"), 15_000);
  const code = await new Promise<number | null>((done) => build.on("close", done));
  clearInterval(ticker);
  if (code !== 0) {
    throw new Error(`./dev controlplane --capi failed (exit ${code}):\n${log.trim().slice(-2000)}`);
  }
  say("built");
}

/** True when a MachinePool webhook answers: CAPI core runs on the cluster (or no webhook does). */
async function coreAnswers(client: KubeClient): Promise<boolean> {
  try {
    await client.create(
      MachinePools,
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        metadata: { name: "demo-core-probe", namespace: NAMESPACE },
        spec: {
          clusterName: "probe",
          template: {
            spec: {
              clusterName: "probe",
              bootstrap: {},
              infrastructureRef: {
                apiGroup: "infrastructure.cluster.x-k8s.io",
                kind: "X",
                name: "x",
              },
            },
          },
        },
      },
      { dryRun: true },
    );
    return false; // accepted: no CAPI webhook validated it
  } catch (error) {
    return /machinepool\.cluster\.x-k8s\.io/.test(String(error));
  }
}

/** Installs the example CRD on a real cluster (the in-memory server takes it via `installCRDs`). */
async function installCrdOnCluster(kubeConfig: KubeConfig, kind: DemoKind): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  try {
    await api.createCustomResourceDefinition({ body: kind.crd as never });
  } catch (error) {
    if ((error as { code?: number }).code !== 409) throw error;
  }
  await waitFor(`the ${kind.kind} CRD to be established`, async () => {
    const crd = await api.readCustomResourceDefinition({ name: kind.crdName });
    return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
  });
}

/** Polls `check` until it returns a truthy value; fails with what it was waiting for. */
async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = PHASE_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Snapshot {
  desired: string;
  observed: string;
  ids: string;
  nodes: string;
  ready: string;
  paused: string;
  instances: string;
  machines: string;
}

/** The fake cloud on a sped-up clock, with a kubelet that registers Nodes. */
const FAKE_TARGET: DemoTarget = {
  kind: FakeCloudMachinePool,
  poolSpec: { instanceType: "small", minSize: 0, maxSize: 10 },
  change: { from: "small", to: "medium", patch: { instanceType: "medium" } },
  provider: "fakecloud-provider",
  async start(kubeConfig, machinePoolMachines) {
    const group = resourceName(POOL_ID);
    const clock = new RealClock({ speed: SPEED });
    const cloud = new FakeScalingCloud({
      clock,
      seed: 1,
      timing: { lingerMs: 10_000 },
      kubelet: nodeRegistrar({ kubeConfig, canJoin: bootstrapTokenCheck(kubeConfig) }),
    });
    say(`fake cloud running at ${SPEED}x speed (boot ${cloud.timing.bootMs / 1000}s cloud time)`);
    const provider = await startFakeCloudProvider({
      kubeConfig,
      cloud: cloud.client,
      name: this.provider,
      logger: { level: process.env.DEMO_LOG ?? "silent" } as never,
      driver: { defaultZones: ["zone-a", "zone-b"], busyRetryMs: 200 },
      controller: { pollIntervalMs: 100, resyncPeriodMs: 2000, readiness: "node" },
      machinePoolMachines,
    });
    say(
      `FakeCloudMachinePool provider running${machinePoolMachines ? " with MachinePool Machines (a FakeCloudMachinePoolMachine per instance)" : ""}`,
    );
    return {
      providerIds: async () => cloud.inspect.providerIds(group),
      instances: async () =>
        cloud.inspect
          .instances({ group })
          .filter((i) => i.state !== "terminated")
          .map((i) => ({ state: i.state, version: String(i.templateVersion) })),
      templateVersions: async () =>
        cloud.inspect.templates().find((t) => t.name === group)?.versions.length ?? 0,
      groupVersion: async () => {
        const found = cloud.inspect.group(group);
        return found && String(found.template.version);
      },
      calls: () => {
        const calls = cloud.calls();
        return { total: calls.length, mutating: calls.filter((c) => c.mutating).length };
      },
      left: async () => ({
        groups: cloud.inspect.groups().length,
        templates: cloud.inspect.templates().length,
      }),
      async stop() {
        await provider.stop();
        clock.dispose();
        await cloud.flush();
      },
    };
  },
};

/** The AWS reference provider on the AWS SDK against moto's server, installed on first use. */
const AWS_TARGET: DemoTarget = {
  kind: ASGMachinePool,
  poolSpec: { instanceType: "t3.small", imageId: "ami-0123456789abcdef0", minSize: 0, maxSize: 10 },
  change: { from: "t3.small", to: "t3.medium", patch: { instanceType: "t3.medium" } },
  provider: "asg-provider",
  async start(kubeConfig) {
    if (!findMoto()?.installed) {
      say(`installing moto's server (first use only): ${MOTO_INSTALL_COMMAND}`);
      const dev = resolve(import.meta.dirname, "..", "..", "..", "dev");
      const install = spawnSync("bash", [dev, "moto", "--install"], { stdio: "inherit" });
      if (install.status !== 0) {
        throw new Error(
          `--cloud aws needs moto's server: ${MOTO_INSTALL_COMMAND} failed (needs Python 3.9+)`,
        );
      }
    }
    const group = asgResourceName(POOL_ID);
    const bed = await startMotoTestBed();
    say(`moto ${bed.moto.version} (EC2 and Auto Scaling APIs) at ${bed.moto.endpoint}`);
    const kubelet = kubeletStandIn({ kubeConfig });
    const tokenCheck = bootstrapTokenCheck(kubeConfig);
    const follower = followMotoInstances({
      bed,
      kubelet,
      joinDelayMs: 500,
      canJoin: (userData) =>
        tokenCheck({
          instanceId: "",
          providerID: "",
          zone: "",
          groupName: group,
          image: "",
          templateVersion: 0,
          userData,
          at: Date.now(),
        }),
    });
    const provider = await startAsgProvider({
      kubeConfig,
      clients: bed.providerClients(),
      name: this.provider,
      logger: { level: process.env.DEMO_LOG ?? "silent" } as never,
      driver: { defaultZones: ["us-east-1a", "us-east-1b"], busyRetryMs: 200 },
      controller: { pollIntervalMs: 100, resyncPeriodMs: 2000, readiness: "node" },
    });
    say(
      "ASGMachinePool provider running on the AWS SDK v3 (Nodes join 500 ms after moto launches)",
    );
    return {
      providerIds: async () => (await bed.instances(group)).map((i) => i.providerID).sort(),
      instances: async () =>
        (await bed.instances(group)).map((i) => ({ state: "running", version: i.version ?? "?" })),
      templateVersions: async () => (await bed.template(group))?.latest ?? 0,
      groupVersion: async () => {
        const { AutoScalingGroups } = await bed.inspect.autoScaling.send(
          new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }),
        );
        return AutoScalingGroups?.[0]?.LaunchTemplate?.Version;
      },
      calls: () => ({
        total: bed.calls.length,
        mutating: bed.calls.filter((c) => c.mutating).length,
      }),
      left: async () => {
        const { AutoScalingGroups = [] } = await bed.inspect.autoScaling.send(
          new DescribeAutoScalingGroupsCommand({}),
        );
        const { LaunchTemplates = [] } = await bed.inspect.ec2.send(
          new DescribeLaunchTemplatesCommand({}),
        );
        return { groups: AutoScalingGroups.length, templates: LaunchTemplates.length };
      },
      async stop() {
        await provider.stop();
        await follower.stop();
        kubelet.stop();
        await bed.stop();
      },
    };
  },
};

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const target = args.cloud === "aws" ? AWS_TARGET : FAKE_TARGET;
  const PROVIDER = target.provider;
  const Pools: ResourceDescriptor<Obj> = {
    group: target.kind.group,
    version: target.kind.storageVersion,
    kind: target.kind.kind,
    plural: target.kind.plural,
    scope: "Namespaced",
    subresources: { status: true },
  };
  // The fake cloud's InfraMachine CRD is always installed, so the flag needs nothing more.
  const machinesKind =
    args.cloud === "aws" ? undefined : fakeCloudKind({ machinePoolMachines: true }).machine;
  const providerCrds = [target.kind.crd, ...(machinesKind ? [machinesKind.crd] : [])];
  heading("setup");
  let kubeConfig: KubeConfig;
  let stopApi: () => Promise<void> = async () => undefined;
  // Counted from the request log (the in-memory server's, or the real server's audit log); a cluster
  // given by --kubeconfig has none to read.
  let providerWrites: () => number | string = () => "n/a";
  const isProviderWrite = (r: { fieldManager?: string; userAgent?: string; verb: string }) =>
    r.fieldManager === PROVIDER ||
    (r.userAgent?.includes(PROVIDER) === true && !["get", "list", "watch"].includes(r.verb));
  let emulate: boolean;
  if (args.kubeconfig) {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(args.kubeconfig);
    await installCrdOnCluster(kubeConfig, target.kind);
    say(`using the cluster in ${args.kubeconfig} (${kubeConfig.getCurrentCluster()?.server})`);
    emulate = args.core === "emulator";
    if (!emulate && !(await coreAnswers(new KubeClient(kubeConfig)))) {
      throw new Error(
        `the cluster in ${args.kubeconfig} runs no CAPI core (no MachinePool webhook answered). Install it with \`clusterctl init\` (CAPI ${capiRelease()}, the release capi-ts targets), or add --core emulator to let the demo play core on a cluster that has only the CAPI CRDs.`,
      );
    }
  } else if (args.core === "real") {
    await ensureRealCore();
    const cp = await startControlPlane({ capiCore: true, requestLog: true });
    await cp.installCRDs(providerCrds);
    kubeConfig = cp.kubeConfig;
    stopApi = () => cp.stop();
    providerWrites = () => cp.requests().filter(isProviderWrite).length;
    emulate = false;
    say(
      `real kube-apiserver ${cp.version} at ${cp.url} with CAPI core ${cp.capiCore?.release} (MachinePool + Machine controllers, webhooks) and ${target.kind.crdName}`,
    );
  } else {
    // HTTPS: the cluster is its own workload cluster, and the kit refuses a plain-HTTP kubeconfig.
    const api = await startApiServer({ tls: true });
    await api.installCRDs([capiCrdsFolder]);
    await api.installCRDs(providerCrds);
    kubeConfig = api.kubeConfig;
    stopApi = () => api.stop();
    providerWrites = () => api.requests(isProviderWrite).length;
    emulate = true;
    say(`in-memory API server at ${api.url} with the CAPI CRDs and ${target.kind.crdName}`);
  }
  const core: CapiCore = await startCapiCore({ kubeConfig, machinePools: emulate });
  say(
    emulate
      ? `CAPI core emulator running (MachinePool controller, ${capiRelease()} semantics) + bootstrap stand-in`
      : "real CAPI core judges; the bootstrap stand-in plays the kubeadm bootstrap provider",
  );
  const cloud = await target.start(kubeConfig, args.machinePoolMachines ?? false);
  say(
    "legend: desired = MachinePool.spec.replicas; observed = status.replicas of pool/MachinePool;",
  );
  say(
    "        nodes = Nodes with a listed providerID; instances: p/r/t = pending/running/terminating, vN = template version",
  );
  const client = new KubeClient(kubeConfig, { fieldManager: "demo-user" });

  // Live progress: one line per change of what a person would look at.
  let previous: Snapshot | undefined;
  const observe = async (): Promise<void> => {
    const [pool, mp, nodes, machines] = await Promise.all([
      client.get(Pools, { namespace: NAMESPACE, name: POOL }).catch(() => undefined),
      client.get(MachinePools, { namespace: NAMESPACE, name: POOL }).catch(() => undefined),
      client.list(NodeResource),
      args.machinePoolMachines
        ? client.list(Machines, { namespace: NAMESPACE }).then((l) => l.items)
        : Promise.resolve([]),
    ]);
    const ids = pool?.spec?.providerIDList ?? [];
    const live = await cloud.instances();
    const cond = (type: string) => pool?.status?.conditions?.find((c) => c.type === type);
    const snap: Snapshot = {
      desired: `${mp?.spec?.replicas ?? "-"}`,
      observed: `${pool?.status?.replicas ?? "-"}/${mp?.status?.replicas ?? "-"}`,
      ids: ids.map((id) => id.replace(/^[a-z]+:\/\/\//, "")).join(" ") || "none",
      nodes: `${nodes.items.filter((n) => ids.includes(n.spec?.providerID ?? "")).length}`,
      ready: cond("Ready") ? `${cond("Ready")?.status}/${cond("Ready")?.reason}` : "-",
      paused: cond("Paused")?.status ?? "-",
      instances: live.map((i) => `${i.state[0]}v${i.version}`).join(",") || "none",
      machines: machines
        .map(
          (m) =>
            `${m.metadata?.deletionTimestamp ? "deleting" : m.status?.nodeRef ? "node" : "new"}`,
        )
        .sort()
        .join(","),
    };
    if (previous && JSON.stringify(previous) === JSON.stringify(snap)) return;
    const changed = (key: keyof Snapshot) => !previous || previous[key] !== snap[key];
    const parts = [
      `desired=${snap.desired}`,
      `observed(pool/mp)=${snap.observed}`,
      `nodes=${snap.nodes}`,
      `Ready=${snap.ready}`,
      `Paused=${snap.paused}`,
      `provider-writes=${providerWrites()}`,
    ];
    say(parts.join("  "));
    if (changed("ids")) say(`    providerIDList: ${snap.ids}`);
    if (changed("instances"))
      say(`    cloud instances (state+template version): ${snap.instances}`);
    if (args.machinePoolMachines && changed("machines"))
      say(`    Machines (new / with a node / deleting): ${snap.machines || "none"}`);
    previous = snap;
  };
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      await observe().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const key = { namespace: NAMESPACE, name: POOL };
  const converged = (replicas: number) =>
    waitFor(`the pool to converge at ${replicas} replicas`, async () => {
      const pool = await client.get(Pools, key);
      const mp = await client.get(MachinePools, key);
      const ids = await cloud.providerIds();
      const ready = pool.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      const coreView = mp.status as { phase?: string; nodeRefs?: unknown[] } | undefined;
      return (
        ready &&
        ids.length === replicas &&
        JSON.stringify(pool.spec?.providerIDList ?? []) === JSON.stringify(ids) &&
        (pool.status?.replicas ?? 0) === replicas &&
        (mp.status?.replicas ?? 0) === replicas &&
        // As core sees it: the MachinePool is Running with a Node reference per instance.
        coreView?.phase === "Running" &&
        (coreView.nodeRefs?.length ?? 0) === replicas
      );
    });
  const setReplicas = (replicas: number) =>
    client.mergePatch(MachinePools, key, { spec: { replicas } });

  heading(`create a Cluster, a MachinePool (3 replicas) and its ${target.kind.kind}`);
  await client.create(Clusters, {
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
  // The control plane is not part of the demo: mark it initialized and point the kubeconfig Secret
  // at the cluster itself, so core reaches "the workload cluster" as it reaches any.
  await markWorkloadClusterReady(client, { namespace: NAMESPACE, name: CLUSTER }, kubeConfig);
  await client.create(KubeadmConfigs, {
    apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmConfig",
    metadata: { name: POOL, namespace: NAMESPACE },
    spec: { format: "cloud-config" },
  });
  await client.create(Pools, {
    apiVersion: target.kind.apiVersion,
    kind: target.kind.kind,
    metadata: { name: POOL, namespace: NAMESPACE },
    spec: target.poolSpec,
  });
  await client.create(MachinePools, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { name: POOL, namespace: NAMESPACE },
    spec: {
      clusterName: CLUSTER,
      replicas: 3,
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
            apiGroup: target.kind.group,
            kind: target.kind.kind,
            name: POOL,
          },
        },
      },
    },
  });
  await converged(3);
  say("converged: 3 instances, 3 Nodes, providerIDList copied, MachinePool Running");

  heading("scale to 5");
  await setReplicas(5);
  await converged(5);

  heading("rotate the bootstrap token");
  const before = await cloud.providerIds();
  const versionsBefore = await cloud.templateVersions();
  await core.bootstrap?.rotateToken(key);
  await waitFor(
    "a new launch template version with the new token",
    async () => (await cloud.templateVersions()) > versionsBefore,
  );
  await new Promise((r) => setTimeout(r, 500));
  const after = await cloud.providerIds();
  const replaced = before.filter((id) => !after.includes(id)).length;
  say(
    `new template version created; instances replaced: ${replaced} (a token-only rotation rolls nothing)`,
  );

  heading(`roll a template change (instanceType ${target.change.from} -> ${target.change.to})`);
  await client.mergePatch(Pools, key, { spec: target.change.patch });
  await waitFor(
    "every instance to run the new template version",
    async () => {
      const version = await cloud.groupVersion();
      const live = await cloud.instances();
      return (
        version !== undefined &&
        live.length === 5 &&
        live.every((i) => i.state === "running" && i.version === version)
      );
    },
    40_000,
  );
  await converged(5);
  say("every instance now runs the latest template version");

  heading("pause, change replicas while paused, unpause");
  await client.mergePatch(
    Clusters,
    { namespace: NAMESPACE, name: CLUSTER },
    { spec: { paused: true } },
  );
  await waitFor("Paused=True", async () => {
    const pool = await client.get(Pools, key);
    return pool.status?.conditions?.some((c) => c.type === "Paused" && c.status === "True");
  });
  const mark = cloud.calls().total;
  await setReplicas(4);
  await new Promise((r) => setTimeout(r, 1000));
  const pausedCalls = cloud.calls().total - mark;
  say(`paused for 1s with replicas changed to 4: ${pausedCalls} cloud calls`);
  if (pausedCalls !== 0)
    throw new Error(`the provider called the cloud ${pausedCalls} times while paused`);
  await client.mergePatch(
    Clusters,
    { namespace: NAMESPACE, name: CLUSTER },
    { spec: { paused: false } },
  );
  await converged(4);

  heading("scale to 0");
  await setReplicas(0);
  await converged(0);

  heading("delete the MachinePool");
  await client.delete(MachinePools, key);
  await waitFor("the MachinePool, its pool, the cloud group and template to be gone", async () => {
    const gone = async (r: ResourceDescriptor<Obj>) =>
      client.get(r, key).then(
        () => false,
        () => true,
      );
    const left = await cloud.left();
    return (
      (await gone(MachinePools)) && (await gone(Pools)) && left.groups === 0 && left.templates === 0
    );
  });
  await observe();
  watching = false;
  await watcher;

  heading("summary");
  const calls = cloud.calls();
  const nodes = await client.list(NodeResource);
  say(`cloud calls: ${calls.total} (${calls.mutating} mutating)`);
  say(`provider API writes: ${providerWrites()}`);
  say(`Nodes left registered: ${nodes.items.length} (instances terminated, Nodes removed by core)`);
  const left = await cloud.left();
  say(`cloud groups left: ${left.groups}, templates left: ${left.templates}`);
  await cloud.stop();
  await core.stop();
  await stopApi();
  say("demo finished");
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `demo failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
