/**
 * The provider test kit (`@capi-ts/sdk/provider/testing`): unit-test a phase — the kit's or your own
 * — without an API server or timers. {@link createTestScope} builds the scope of one reconcile around
 * any driver, with a manual clock, a fake Kubernetes API ({@link TestScope.readyNodes},
 * {@link TestScope.nodeTaints}, {@link TestScope.replicaWrites}), recorded Events and the sections
 * earlier phases would have written; {@link TestScope.run} runs a phase with the same checks as the pipeline. {@link fakeCloud}
 * is a small in-memory cloud behind a {@link PoolDriver}, {@link fakeMachines} in-memory MachinePool
 * Machines. For a driver's own tests, {@link poolContext}, {@link newTemplateVersion},
 * {@link groupIntent} and {@link templateStamp} build what the kit passes to it,
 * filling what a test does not care about (so a member a later release adds breaks no test).
 * {@link expectLosslessConversion} checks a kind's conversions between API versions lose nothing.
 *
 * @example
 * ```ts
 * import { createTestScope, fakeCloud } from "@capi-ts/sdk/provider/testing";
 *
 * const cloud = fakeCloud();
 * cloud.group = { id: "g-1", status: "active", desiredReplicas: 0, templateVersion: "1", settings: { maxSize: 10 }, instances: [] };
 * const test = createTestScope({ driver: cloud.driver, spec: { image: "img-1" },
 *   sections: { group: { group: cloud.group, desired: 0, external: false } } });
 * await test.run(recordGroupId);
 * test.scope.pool.status; // { groupId: "g-1" }
 * ```
 *
 * @module
 */
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import { ManualClock } from "../runtime/clock.js";
import { ConflictError } from "../runtime/errors.js";
import { silentLogger } from "../runtime/logging.js";
import type { AnyPoolDriver } from "./driver.js";
import type { InfraMachinePoolKind } from "./kind.js";
import type { PoolMachinesApi } from "./machines.js";
import { PoolMemory } from "./memory.js";
import type { NodeDrainApi } from "./node-drain.js";
import type { NodeMetadataPatch, PoolNode } from "./nodes.js";
import { type MachinePoolControllerOptions, resolvePoolOptions } from "./options.js";
import {
  type PhaseResult,
  POOL_SECTION_NAMES,
  type PoolPhase,
  type PoolSectionName,
  type PoolSections,
} from "./phase.js";
import { contextFor, createPoolScope } from "./pool-scope.js";
import type { ControlPlaneObject, PoolObject, PoolScope, ReadyState } from "./scope.js";
import { PRELOADED, runPhase, sectionsOf } from "./sections.js";
import { type FakeSettings, type FakeSpec, fakeCloud } from "./testing-cloud.js";
import { type FakeMachines, fakeMachineKind } from "./testing-machines.js";

// The kit's types this module's declarations name, re-exported so that a test imports them from
// here and the declaration bundler takes them from a shared chunk, not from the package root's.
export type { AnyPoolDriver, PoolDriver } from "./driver.js";
export type {
  GroupIntent,
  GroupUpdate,
  NewTemplateVersion,
  PoolAccess,
  PoolCallContext,
  PoolContext,
  PoolEnvironment,
  PoolGroup,
  PoolIdentity,
  PoolInstance,
  PoolInstanceState,
  TemplateStamp,
  TemplateVersion,
} from "./driver-types.js";
export type { InfraMachinePoolKind } from "./kind.js";
export type { MachinePoolControllerOptions, ResolvedPoolOptions } from "./options.js";
// What the kit runs with for given controller options (its defaults applied, values validated): a
// test or a benchmark that states the kit's defaults reads them here.
export { resolvePoolOptions } from "./options.js";
export {
  type FakeCall,
  type FakeCloud,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  instanceOf,
} from "./testing-cloud.js";
export {
  ConversionRoundTripError,
  type ConvertedKind,
  expectLosslessConversion,
  firstDifference,
  type LosslessConversionOptions,
} from "./testing-conversion.js";
export { type FakeWorkloadDrain, fakeWorkloadDrain } from "./testing-drain.js";
export {
  type GroupIntentInput,
  groupIntent,
  newTemplateVersion,
  type PoolContextInput,
  poolContext,
  TEST_POOL,
  templateStamp,
} from "./testing-inputs.js";
export { type FakeMachines, fakeMachineKind, fakeMachines } from "./testing-machines.js";

/** An Event the scope recorded. */
export interface RecordedEvent {
  /** `Normal` or `Warning`. */
  readonly type: "Normal" | "Warning";
  /** CamelCase reason. */
  readonly reason: string;
  /** Message. */
  readonly message: string;
}

/** A scope of one reconcile for a test, and what the phases did through it. */
export interface TestScope<Spec, Settings> {
  /** The scope (pass it to {@link TestScope.run}; its `pool` is the object the kit would patch). */
  readonly scope: PoolScope<Spec, Settings>;
  /** The scope's clock. */
  readonly clock: ManualClock;
  /** The Events recorded, in order. */
  readonly events: RecordedEvent[];
  /** Writes to `MachinePool.spec.replicas` (`scope.api.setMachinePoolReplicas`). */
  readonly replicaWrites: number[];
  /** ProviderIDs of Ready Nodes (`scope.api.readyNodeProviderIDs`); fill it to test `readiness: "node"`. */
  readonly readyNodes: Set<string>;
  /**
   * The taint keys of each Node, by providerID (`scope.api.taintedNodeProviderIDs`); set one to
   * `ToBeDeletedByClusterAutoscaler` to test the cluster-autoscaler's scale-down.
   */
  readonly nodeTaints: Map<string, readonly string[]>;
  /**
   * The workload cluster's Nodes by providerID (`scope.api.nodes`): fill it to test the `nodes`
   * phase or `minReadySeconds`; patches change it (a taint patch with a stale `resourceVersion` is a
   * `ConflictError`, as the API server answers).
   */
  readonly workloadNodes: Map<string, PoolNode>;
  /** The Node patches made through `scope.api.nodes`, in order. */
  readonly nodePatches: { readonly name: string; readonly patch: NodeMetadataPatch }[];
  /**
   * The Cluster's control plane object as `scope.api.readControlPlane` returns it (set `current`
   * to change it between runs; `undefined`: it does not exist), and how often it was read. Only
   * with the `controlPlane` option does the Cluster reference one.
   */
  readonly controlPlane: { current: ControlPlaneObject | undefined; reads: number };
  /**
   * Runs one phase as the pipeline does: on a view limited to its declared sections, refusing a
   * phase that goes on without writing what it declared.
   */
  run<Reads extends PoolSectionName, Writes extends PoolSectionName>(
    phase: PoolPhase<Spec, Settings, Reads, Writes> | PoolPhase<unknown, unknown, Reads, Writes>,
  ): Promise<PhaseResult | undefined>;
  /** A section as the phases left it, or `undefined` if none wrote it. */
  section<K extends PoolSectionName>(name: K): PoolSections<Spec, Settings>[K] | undefined;
  /** The provider conditions phases set (`scope.conditions.set`), by type. */
  conditions(): ReadonlyMap<string, ReadyState>;
}

/** Options of {@link createTestScope}; everything but `driver` and `spec` has a default. */
export interface TestScopeOptions<Spec, Settings> {
  /** The driver the scope calls. */
  readonly driver: AnyPoolDriver<Spec, Settings>;
  /** The pool's spec. */
  readonly spec: Spec;
  /** Fields of the pool object (default: `default/pool-1` of cluster `c1`). */
  readonly pool?: Partial<PoolObject>;
  /** `MachinePool.spec.replicas` (default 2). */
  readonly replicas?: number;
  /** Annotations of the MachinePool (e.g. `cluster.x-k8s.io/replicas-managed-by`). */
  readonly machinePoolAnnotations?: Readonly<Record<string, string>>;
  /**
   * The MachinePool's `spec.template` beyond the default: its `metadata` (labels) and fields of its
   * `spec` (`taints`, `minReadySeconds`), merged over the default template.
   */
  readonly machinePoolTemplate?: {
    readonly metadata?: { readonly labels?: Readonly<Record<string, string>> };
    readonly spec?: Readonly<Record<string, unknown>>;
  };
  /** The controller's options (default: `pollIntervalMs` 100, `readiness: "instance"`). */
  readonly options?: Omit<MachinePoolControllerOptions<Spec>, "manager" | "kind">;
  /** The kind's schema and InfraMachine kind. */
  readonly kind?: Pick<InfraMachinePoolKind<Spec>, "schema" | "machine">;
  /** The clock (default: a new `ManualClock`). */
  readonly clock?: ManualClock;
  /** The bootstrap data Secret's `value` (and `format`) (default `#cloud-config`). */
  readonly bootstrapData?: { readonly value: string; readonly format?: string };
  /**
   * Sections earlier phases would have written, to start from the middle of the pipeline. When given
   * without `spec`, the `spec` section is `spec` above (as `validateSpec` would write it).
   */
  readonly sections?: Partial<PoolSections<Spec, Settings>>;
  /** InfraMachines and Machines (MachinePool Machines), e.g. {@link fakeMachines}`().api`. */
  readonly machinesApi?: PoolMachinesApi;
  /** What the kit remembers about the pool from earlier reconciles (default: nothing). */
  readonly memory?: TestScopeMemory;
  /**
   * A control plane object for the Cluster's `spec.controlPlaneRef` (the preflight checks read it);
   * default: the Cluster has none.
   */
  readonly controlPlane?: ControlPlaneObject;
  /** Annotations of the pool object (e.g. the preflight checks' skip annotation). */
  readonly poolAnnotations?: Readonly<Record<string, string>>;
  /** The workload cluster a drain reaches (default: none, so nothing is drained), e.g. {@link fakeWorkloadDrain}`().api`. */
  readonly drainApi?: NodeDrainApi;
  /** The MachinePool's `spec.template.spec.deletion.nodeDrainTimeoutSeconds` (default: unset). */
  readonly nodeDrainTimeoutSeconds?: number;
}

/** What the kit remembered about a pool, carried from one {@link createTestScope} to the next. */
export type TestScopeMemory = PoolScope<unknown, unknown>["memory"];

/**
 * Builds the scope of one reconcile of pool `default/pool-1` (cluster `c1`, a MachinePool of the
 * same name) around `driver`, for a unit test of a phase.
 *
 * @example
 * ```ts
 * const test = createTestScope({ driver: fooDriver, spec: { instanceType: "m5.large" } });
 * const result = await test.run(myPhase);
 * ```
 */
export function createTestScope<Spec, Settings>(
  options: TestScopeOptions<Spec, Settings>,
): TestScope<Spec, Settings> {
  const clock = options.clock ?? new ManualClock();
  const events: RecordedEvent[] = [];
  const replicaWrites: number[] = [];
  const readyNodes = new Set<string>();
  const nodeTaints = new Map<string, readonly string[]>();
  const workloadNodes = new Map<string, PoolNode>();
  const nodePatches: { name: string; patch: NodeMetadataPatch }[] = [];
  const template = options.machinePoolTemplate;
  const controlPlane = { current: options.controlPlane, reads: 0 };
  const cpRef = options.controlPlane
    ? {
        apiGroup: (options.controlPlane.apiVersion ?? "").split("/")[0] ?? "",
        kind: options.controlPlane.kind ?? "",
        name: options.controlPlane.metadata?.name ?? "",
      }
    : undefined;
  const pool: PoolObject = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "FakeMachinePool",
    metadata: {
      namespace: "default",
      name: "pool-1",
      uid: "uid-1",
      labels: { "cluster.x-k8s.io/cluster-name": "c1" },
      ...(options.poolAnnotations ? { annotations: { ...options.poolAnnotations } } : {}),
    },
    spec: { ...(options.spec as Record<string, unknown>) },
    ...options.pool,
  };
  const machinePool = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: {
      namespace: "default",
      name: "pool-1",
      ...(options.machinePoolAnnotations
        ? { annotations: { ...options.machinePoolAnnotations } }
        : {}),
    },
    spec: {
      clusterName: "c1",
      replicas: options.replicas ?? 2,
      template: {
        ...(template?.metadata ? { metadata: structuredClone(template.metadata) } : {}),
        spec: {
          clusterName: "c1",
          version: "v1.34.1",
          bootstrap: { dataSecretName: "pool-1-bootstrap" },
          ...(options.nodeDrainTimeoutSeconds !== undefined
            ? { deletion: { nodeDrainTimeoutSeconds: options.nodeDrainTimeoutSeconds } }
            : {}),
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "FakeMachinePool",
            name: "pool-1",
          },
          ...structuredClone(template?.spec ?? {}),
        },
      },
    },
  } as unknown as MachinePool;
  const cluster = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { namespace: "default", name: "c1" },
    spec: cpRef ? { controlPlaneRef: cpRef } : {},
    status: { initialization: { infrastructureProvisioned: true } },
  } as unknown as Cluster;
  const secret = options.bootstrapData ?? { value: "#cloud-config\n" };
  const scope = createPoolScope<Spec, Settings>({
    pool,
    machinePool,
    cluster,
    driver: options.driver,
    options: resolvePoolOptions<Spec>({
      pollIntervalMs: 100,
      // A scope over a cloud alone: pass `readiness: "node"` and fill `readyNodes` to test Nodes.
      readiness: "instance",
      ...options.options,
      ...(options.kind ? { kind: options.kind } : {}),
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
      taintedNodeProviderIDs: async (providerIDs, taintKey) =>
        new Set([...providerIDs].filter((id) => nodeTaints.get(id)?.includes(taintKey))),
      ...(cpRef
        ? {
            readControlPlane: async () => {
              controlPlane.reads++;
              return controlPlane.current && structuredClone(controlPlane.current);
            },
          }
        : {}),
      setMachinePoolReplicas: async (_mp, replicas) => {
        replicaWrites.push(replicas);
      },
      nodes: {
        get: async (providerIDs) => {
          const found = new Map<string, PoolNode>();
          for (const id of providerIDs) {
            const node = workloadNodes.get(id);
            if (node) found.set(id, structuredClone(node));
          }
          return found;
        },
        patch: async (node, patch) => {
          nodePatches.push({ name: node.name, patch: structuredClone(patch) });
          const current = [...workloadNodes.values()].find((n) => n.name === node.name);
          if (!current) return;
          if (patch.taints && current.resourceVersion !== node.resourceVersion) {
            throw new ConflictError(
              409,
              { reason: "Conflict", message: "the object has been modified" },
              { method: "PATCH", path: `/api/v1/nodes/${node.name}` },
            );
          }
          const merge = (
            into: Readonly<Record<string, string>>,
            changes: Readonly<Record<string, string | null>> | undefined,
          ) => {
            const out: Record<string, string> = { ...into };
            for (const [key, value] of Object.entries(changes ?? {})) {
              if (value === null) delete out[key];
              else out[key] = value;
            }
            return out;
          };
          workloadNodes.set(current.providerID, {
            ...current,
            resourceVersion: String(Number(current.resourceVersion || "0") + 1),
            labels: merge(current.labels, patch.labels),
            annotations: merge(current.annotations, patch.annotations),
            taints: patch.taints ? structuredClone([...patch.taints]) : current.taints,
          });
        },
      },
      ...(options.machinesApi ? { machines: options.machinesApi } : {}),
      ...(options.drainApi ? { drain: options.drainApi } : {}),
    },
    recordEvent: (type, reason, message) => events.push({ type, reason, message }),
    log: silentLogger(),
  });
  if (options.sections) {
    const store = sectionsOf(scope);
    const given = options.sections;
    for (const name of POOL_SECTION_NAMES) {
      if (given[name] !== undefined || (name === "machines" && name in given)) {
        store.write(name, given[name] as PoolSections<Spec, Settings>[typeof name], PRELOADED);
      }
    }
    if (given.spec === undefined) {
      store.write(
        "spec",
        { spec: options.spec, context: contextFor(scope, options.spec) },
        PRELOADED,
      );
    }
  }
  return {
    scope,
    clock,
    events,
    replicaWrites,
    readyNodes,
    nodeTaints,
    workloadNodes,
    nodePatches,
    controlPlane,
    // The kit's own phases are typed over any spec (`unknown`); they run on this scope unchanged.
    run: (phase) => runPhase(phase as PoolPhase<Spec, Settings>, scope),
    section: (name) => sectionsOf(scope).peek(name),
    conditions: () => sectionsOf(scope).conditions,
  };
}

/** Options of {@link fakeScope}: {@link TestScopeOptions} over {@link fakeCloud}'s spec. */
export interface FakeScopeOptions
  extends Partial<Omit<TestScopeOptions<FakeSpec, FakeSettings>, "kind" | "machinesApi">> {
  /** The kind's schema. */
  readonly schema?: NonNullable<InfraMachinePoolKind<FakeSpec>["schema"]>;
  /** MachinePool Machines: the kind gets {@link fakeMachineKind} and the API these fakes. */
  readonly machines?: FakeMachines;
}

/** {@link createTestScope} around {@link fakeCloud}'s driver (a new cloud unless `driver` is given). */
export function fakeScope(options: FakeScopeOptions = {}): TestScope<FakeSpec, FakeSettings> {
  const { schema, machines, driver, spec, ...rest } = options;
  return createTestScope<FakeSpec, FakeSettings>({
    ...rest,
    driver: driver ?? fakeCloud().driver,
    spec: spec ?? { image: "img-1" },
    kind: {
      ...(schema ? { schema } : {}),
      ...(machines ? { machine: fakeMachineKind } : {}),
    },
    ...(machines ? { machinesApi: machines.api } : {}),
  });
}
