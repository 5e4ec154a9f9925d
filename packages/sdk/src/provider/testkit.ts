/**
 * Fakes for unit tests of the kit's phases: an in-memory cloud behind a {@link PoolDriver}, and a
 * {@link PoolScope} around it with a manual clock, a fake Kubernetes API and recorded Events. No API
 * server, no timers: a phase test runs in milliseconds. Not part of the public API.
 *
 * @module
 */
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import { ManualClock } from "../runtime/clock.js";
import { silentLogger } from "../runtime/logging.js";
import type {
  AnyPoolDriver,
  GroupUpdate,
  PoolDriver,
  PoolGroup,
  PoolInstance,
  PoolInstanceState,
  TemplateVersion,
} from "./driver.js";
import { PoolMemory } from "./memory.js";
import { type MachinePoolControllerOptions, resolvePoolOptions } from "./options.js";
import { createPoolScope, type PoolObject, type PoolScope } from "./scope.js";
import type { PoolState } from "./state.js";
import { type FakeMachines, fakeMachineKind } from "./testkit-machines.js";

/** The fake's spec and settings. */
export interface FakeSpec {
  readonly image: string;
  readonly maxSize?: number;
}
/** The fake's group settings. */
export interface FakeSettings {
  readonly maxSize: number;
}

/** A recorded driver call. */
export interface FakeCall {
  readonly op: keyof PoolDriver<FakeSpec, FakeSettings>;
  readonly args: readonly unknown[];
}

/** The in-memory cloud: what is there, what was called; `faults` make a method throw. */
export interface FakeCloud {
  versions: TemplateVersion[];
  group: PoolGroup<FakeSettings> | undefined;
  readonly calls: FakeCall[];
  readonly faults: Partial<Record<FakeCall["op"], () => unknown>>;
  readonly driver: PoolDriver<FakeSpec, FakeSettings>;
  /** Mutating calls so far. */
  mutating(): FakeCall[];
}

let instanceSeq = 0;

/** An instance of the fake cloud. */
export function fakeInstance(overrides: Partial<PoolInstance> = {}): PoolInstance {
  const id = overrides.id ?? `i-${++instanceSeq}`;
  return {
    id,
    providerID: `fake:///zone-a/${id}`,
    state: "running",
    templateVersion: "1",
    createdAt: instanceSeq,
    ...overrides,
  };
}

/**
 * An instance named `id` for the pure engine's tests: launched at the number in its ID (`i3` at 3),
 * running, healthy and on template version "2" unless `options` say otherwise.
 */
export function instanceOf(
  id: string,
  options: {
    state?: PoolInstanceState;
    version?: string;
    createdAt?: number;
    healthy?: boolean;
  } = {},
): PoolInstance {
  return {
    id,
    providerID: `fake:///zone-a/${id}`,
    state: options.state ?? "running",
    templateVersion: options.version ?? "2",
    createdAt: options.createdAt ?? Number(id.replace(/\D/g, "") || 0),
    healthy: options.healthy ?? true,
  };
}

/** A fake cloud whose driver stores what it is given and reports it back. */
export function fakeCloud(): FakeCloud {
  const cloud: FakeCloud = {
    versions: [],
    group: undefined,
    calls: [],
    faults: {},
    mutating: () => cloud.calls.filter((c) => !["getGroup", "getTemplate"].includes(c.op)),
    driver: undefined as unknown as PoolDriver<FakeSpec, FakeSettings>,
  };
  const record = (op: FakeCall["op"], args: readonly unknown[]) => {
    cloud.calls.push({ op, args });
    const fault = cloud.faults[op];
    if (fault) throw fault();
  };
  const driver: PoolDriver<FakeSpec, FakeSettings> = {
    templateInputs: (ctx) => ({ image: ctx.spec.image }),
    groupSettings: (ctx) => ({ maxSize: ctx.spec.maxSize ?? 10 }),
    async getTemplate() {
      record("getTemplate", []);
      return cloud.versions;
    },
    async createTemplateVersion(_ctx, input) {
      record("createTemplateVersion", [input.stamp]);
      const version = { version: String(cloud.versions.length + 1), stamp: input.stamp };
      cloud.versions = [...cloud.versions, version];
      return version;
    },
    async deleteTemplate(_ctx, versions) {
      record("deleteTemplate", [versions]);
      cloud.versions = versions ? cloud.versions.filter((v) => !versions.includes(v.version)) : [];
    },
    async getGroup() {
      record("getGroup", []);
      return cloud.group;
    },
    async createGroup(_ctx, intent) {
      record("createGroup", [intent]);
      cloud.group = {
        id: "group-1",
        status: "active",
        desiredReplicas: intent.replicas ?? 0,
        templateVersion: intent.templateVersion,
        settings: intent.settings,
        instances: [],
      };
    },
    async updateGroup(_ctx, update: GroupUpdate<FakeSettings>) {
      record("updateGroup", [update]);
      const group = cloud.group;
      if (!group) return;
      cloud.group = {
        ...group,
        ...(update.replicas !== undefined ? { desiredReplicas: update.replicas } : {}),
        ...(update.templateVersion !== undefined
          ? { templateVersion: update.templateVersion }
          : {}),
        ...(update.settings !== undefined ? { settings: update.settings } : {}),
      };
    },
    async deleteGroup() {
      record("deleteGroup", []);
      if (cloud.group) cloud.group = { ...cloud.group, status: "deleting" };
    },
    async deleteInstance(_ctx, instance, mode) {
      record("deleteInstance", [instance.id, mode]);
      const group = cloud.group;
      if (!group) return;
      cloud.group = {
        ...group,
        desiredReplicas: group.desiredReplicas - (mode === "shrink" ? 1 : 0),
        instances: group.instances.filter((i) => i.id !== instance.id),
      };
    },
  };
  (cloud as { driver: PoolDriver<FakeSpec, FakeSettings> }).driver = driver;
  return cloud;
}

/** What {@link fakeScope} returns besides the scope. */
export interface FakeScope {
  readonly scope: PoolScope<FakeSpec, FakeSettings>;
  readonly clock: ManualClock;
  readonly events: { type: "Normal" | "Warning"; reason: string; message: string }[];
  /** Writes to `MachinePool.spec.replicas`. */
  readonly replicaWrites: number[];
  /** ProviderIDs of Ready Nodes. */
  readonly readyNodes: Set<string>;
}

/** Options of {@link fakeScope}. */
export interface FakeScopeOptions {
  readonly driver?: AnyPoolDriver<FakeSpec, FakeSettings>;
  readonly spec?: FakeSpec;
  readonly pool?: Partial<PoolObject>;
  readonly replicas?: number;
  readonly options?: Omit<MachinePoolControllerOptions<FakeSpec>, "manager" | "kind">;
  readonly schema?: NonNullable<MachinePoolControllerOptions<FakeSpec>["kind"]["schema"]>;
  readonly clock?: ManualClock;
  readonly memory?: PoolMemory;
  readonly state?: PoolState<FakeSpec, FakeSettings>;
  readonly secret?: { value: string; format?: string };
  /** MachinePool Machines: the kind gets {@link fakeMachineKind} and the API these fakes. */
  readonly machines?: FakeMachines;
}

/** A scope for one reconcile of a pool `default/pool-1` of cluster `c1`, around a fake driver. */
export function fakeScope(options: FakeScopeOptions = {}): FakeScope {
  const clock = options.clock ?? new ManualClock();
  const events: FakeScope["events"] = [];
  const replicaWrites: number[] = [];
  const readyNodes = new Set<string>();
  const pool: PoolObject = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "FakeMachinePool",
    metadata: {
      namespace: "default",
      name: "pool-1",
      uid: "uid-1",
      labels: { "cluster.x-k8s.io/cluster-name": "c1" },
    },
    spec: { ...(options.spec ?? { image: "img-1" }) },
    ...options.pool,
  };
  const machinePool = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { namespace: "default", name: "pool-1" },
    spec: {
      clusterName: "c1",
      replicas: options.replicas ?? 2,
      template: {
        spec: {
          clusterName: "c1",
          version: "v1.34.1",
          bootstrap: { dataSecretName: "pool-1-bootstrap" },
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "FakeMachinePool",
            name: "pool-1",
          },
        },
      },
    },
  } as unknown as MachinePool;
  const cluster = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { namespace: "default", name: "c1" },
    spec: {},
    status: { initialization: { infrastructureProvisioned: true } },
  } as unknown as Cluster;
  const secret = options.secret ?? { value: "#cloud-config\n" };
  const scope = createPoolScope<FakeSpec, FakeSettings>({
    pool,
    machinePool,
    cluster,
    driver: options.driver ?? fakeCloud().driver,
    options: resolvePoolOptions<FakeSpec>({
      pollIntervalMs: 100,
      // A scope over a cloud alone: pass `readiness: "node"` and fill `readyNodes` to test Nodes.
      readiness: "instance",
      ...options.options,
      kind: {
        ...(options.schema ? { schema: options.schema } : {}),
        ...(options.machines ? { machine: fakeMachineKind } : {}),
      },
    }),
    clock,
    memory: options.memory ?? new PoolMemory(),
    api: {
      readSecret: async () => ({
        data: {
          value: Buffer.from(secret.value).toString("base64"),
          ...(secret.format ? { format: Buffer.from(secret.format).toString("base64") } : {}),
        },
      }),
      readyNodeProviderIDs: async (providerIDs) =>
        new Set([...providerIDs].filter((id) => readyNodes.has(id))),
      setMachinePoolReplicas: async (_mp, replicas) => {
        replicaWrites.push(replicas);
      },
      ...(options.machines ? { machines: options.machines.api } : {}),
    },
    recordEvent: (type, reason, message) => events.push({ type, reason, message }),
    log: silentLogger(),
    ...(options.state ? { state: options.state } : {}),
  });
  return { scope, clock, events, replicaWrites, readyNodes };
}
