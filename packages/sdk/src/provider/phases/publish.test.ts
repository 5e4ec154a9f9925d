// The `publish` phase on a fake scope: what it publishes on the pool (providerIDList, replicas,
// provisioned) and each `Ready` it can end the reconcile with, a capacity problem among them.
import { describe, expect, it } from "vitest";
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import type { PoolGroup, PoolInstance } from "../driver.js";
import type { MachinesState } from "../machines.js";
import { PoolMemory } from "../memory.js";
import type { CapacitySection, PoolSections, ScaleSection } from "../phase.js";
import type { Plan } from "../plan.js";
import {
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeScope,
  instanceOf,
} from "../testing.js";
import { publishPhase } from "./publish.js";

const POLL_MS = 100;

/** A plan of a pool where it should be, with `live` instances. */
function plan(overrides: Partial<Plan> = {}): Plan {
  const live = overrides.live ?? 2;
  return {
    actions: [],
    live,
    available: live,
    outdated: 0,
    targetGroupSize: live,
    converged: true,
    blockedByAvailability: false,
    failed: 0,
    remediationWaiting: [],
    healthCheckFailed: 0,
    ...overrides,
  };
}

function group(
  instances: readonly PoolInstance[] = [instanceOf("i2"), instanceOf("i1")],
  overrides: Partial<PoolGroup<FakeSettings>> = {},
): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: instances.length,
    templateVersion: "2",
    settings: { maxSize: 10 },
    instances,
    ...overrides,
  };
}

interface PublishInputs {
  readonly group?: PoolGroup<FakeSettings>;
  readonly desired?: number;
  readonly scale?: Partial<ScaleSection>;
  readonly machines?: MachinesState | null;
  readonly note?: string;
  readonly capacityProblem?: CapacitySection["problem"];
}

/** What the phases before `publish` would have written. */
function publishInputs(inputs: PublishInputs = {}): Partial<PoolSections<FakeSpec, FakeSettings>> {
  const g = inputs.group ?? group();
  return {
    group: { group: g, desired: inputs.desired ?? 2, external: false },
    scale: {
      strategy: { maxSurge: 1, maxUnavailable: 0, deletePolicy: "Oldest" },
      plan: plan(),
      outdated: 0,
      provisioned: true,
      workloadUnavailable: undefined,
      ...inputs.scale,
    },
    machines: inputs.machines ?? null,
    rollout: { note: inputs.note },
    capacity: { capacity: undefined, problem: inputs.capacityProblem },
  };
}

function publishScope(inputs: PublishInputs = {}, options: FakeScopeOptions = {}) {
  return fakeScope({ sections: publishInputs(inputs), ...options });
}

function leaving(ids: readonly string[]): MachinesState {
  return {
    leaving: new Set(ids),
    pendingShrink: ids.length,
    machineOf: new Map(),
    deletePriority: new Set(),
    groupSize: 2,
    remediate: new Set(),
    remediationsInFlight: 0,
  };
}

describe("publish: the pool's status", () => {
  it("publishes the sorted providerIDs, replicas and provisioned, and is Ready", async () => {
    const { run, scope } = publishScope();
    const result = await run(publishPhase);
    expect(scope.pool.spec?.providerIDList).toEqual(["fake:///zone-a/i1", "fake:///zone-a/i2"]);
    expect(scope.pool.status).toMatchObject({
      replicas: 2,
      ready: true,
      initialization: { provisioned: true },
    });
    expect(result).toEqual({
      ready: { status: "True", reason: "Ready", message: "" },
      requeueAfterMs: scope.options.resyncMs,
    });
  });

  it("does not mark a pool provisioned before scale says it is", async () => {
    const { run, scope } = publishScope({ scale: { provisioned: false } });
    await run(publishPhase);
    expect(scope.pool.status?.replicas).toBe(2);
    expect(scope.pool.status?.ready).toBeUndefined();
    expect(scope.pool.status?.initialization).toBeUndefined();
  });
});

describe("publish: Ready False", () => {
  it("reports a failed group with the cloud's message, still publishing its instances", async () => {
    const { run, scope } = publishScope({
      group: group(undefined, { status: "failed", message: "launch failed: InsufficientCapacity" }),
    });
    const result = await run(publishPhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "GroupFailed",
        message: "launch failed: InsufficientCapacity",
      },
      requeueAfterMs: POLL_MS,
    });
    expect(scope.pool.spec?.providerIDList).toHaveLength(2);
  });

  it("reports a failed group without a message by its ID", async () => {
    const { run } = publishScope({ group: group(undefined, { status: "failed" }) });
    expect((await run(publishPhase))?.ready.message).toBe("group group-1 reports a failure");
  });

  it("reports an unreachable workload cluster, coming back when the cache retries", async () => {
    const error = new WorkloadClusterUnavailableError(
      { namespace: "default", name: "c1" },
      "KubeconfigSecretNotFound",
      "Secret default/c1-kubeconfig not found",
      5_000,
    );
    const { run } = publishScope({
      scale: { workloadUnavailable: error, outdated: 1, plan: plan({ live: 3 }) },
    });
    expect(await run(publishPhase)).toEqual({
      ready: {
        status: "False",
        reason: "WorkloadClusterUnreachable",
        message:
          "KubeconfigSecretNotFound: Secret default/c1-kubeconfig not found; rollouts wait until its Nodes can be read (1 of 3 instances outdated)",
      },
      requeueAfterMs: 5_000,
    });
  });

  it("polls at least every poll interval while the workload cluster is unreachable", async () => {
    const error = new WorkloadClusterUnavailableError(
      { namespace: "default", name: "c1" },
      "WorkloadClusterUnreachable",
      "connection refused",
      1,
    );
    const { run } = publishScope({ scale: { workloadUnavailable: error } });
    const result = await run(publishPhase);
    expect(result?.ready.message).toBe(
      "WorkloadClusterUnreachable: connection refused; rollouts wait until its Nodes can be read",
    );
    expect(result?.requeueAfterMs).toBe(POLL_MS);
  });

  it("puts a failed group before an unreachable workload cluster", async () => {
    const error = new WorkloadClusterUnavailableError(
      { namespace: "default", name: "c1" },
      "WorkloadClusterUnreachable",
      "connection refused",
      1,
    );
    const { run } = publishScope({
      group: group(undefined, { status: "failed" }),
      scale: { workloadUnavailable: error },
    });
    expect((await run(publishPhase))?.ready.reason).toBe("GroupFailed");
  });

  it("waits for a Machine to be drained and its instance deleted", async () => {
    const { run } = publishScope({ machines: leaving(["i3"]) });
    expect(await run(publishPhase)).toEqual({
      ready: {
        status: "False",
        reason: "ScalingDown",
        message: "waiting for 1 Machine to be drained and its instance deleted",
      },
      requeueAfterMs: POLL_MS,
    });
  });

  it("waits for several Machines in the plural", async () => {
    const { run } = publishScope({ machines: leaving(["i3", "i4"]) });
    expect((await run(publishPhase))?.ready.message).toBe(
      "waiting for 2 Machines to be drained and their instances deleted",
    );
  });

  it("is Ready with MachinePool Machines once none is leaving", async () => {
    const { run } = publishScope({ machines: leaving([]) });
    expect((await run(publishPhase))?.ready.status).toBe("True");
  });

  it("is not Ready while the grace keeps an ID the cloud no longer lists", async () => {
    const memory = new PoolMemory();
    const test = publishScope({}, { memory });
    test.scope.pool.spec = { ...test.scope.pool.spec, providerIDList: ["fake:///zone-a/i9"] };
    const result = await test.run(publishPhase);
    expect(test.scope.pool.spec?.providerIDList).toContain("fake:///zone-a/i9");
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "InstancesNotReady",
        message: "2 of 2 instances available",
      },
      requeueAfterMs: POLL_MS,
    });
  });
});

describe("publish: progress", () => {
  it("reports a rollout with the number of outdated instances", async () => {
    const { run } = publishScope({
      scale: { outdated: 2, plan: plan({ live: 3, converged: false }) },
    });
    expect(await run(publishPhase)).toEqual({
      ready: { status: "False", reason: "RollingOut", message: "2 of 3 instances outdated" },
      requeueAfterMs: POLL_MS,
    });
  });

  it("says a rollout waits for availability, and adds the native rollout's note", async () => {
    const { run } = publishScope({
      scale: {
        outdated: 1,
        plan: plan({ live: 3, converged: false, blockedByAvailability: true }),
      },
      note: "native rollout r-1 running (50%)",
    });
    expect((await run(publishPhase))?.ready.message).toBe(
      "1 of 3 instances outdated; waiting for new instances to become available; native rollout r-1 running (50%)",
    );
  });

  it("reports a rollout as RollingOut even with nothing planned (a native rollout runs)", async () => {
    // The section counts outdated instances the plan left to the native rollout.
    const { run } = publishScope({ scale: { outdated: 1 }, note: "native rollout started" });
    expect((await run(publishPhase))?.ready).toEqual({
      status: "False",
      reason: "RollingOut",
      message: "1 of 2 instances outdated; native rollout started",
    });
  });

  it("reports failed instances being replaced as Remediating", async () => {
    const { run } = publishScope({
      scale: { plan: plan({ live: 3, failed: 1, available: 2, converged: false }) },
      desired: 3,
    });
    expect((await run(publishPhase))?.ready).toEqual({
      status: "False",
      reason: "Remediating",
      message: "1 of 3 instances failed; replacing them",
    });
  });

  it("reports fewer instances than desired as ScalingUp", async () => {
    const action = { kind: "setReplicas", replicas: 4, reason: "ScaleUp" } as const;
    const { run } = publishScope({
      scale: { plan: plan({ live: 2, actions: [action], converged: false }) },
      desired: 4,
    });
    expect((await run(publishPhase))?.ready).toEqual({
      status: "False",
      reason: "ScalingUp",
      message: "2 of 4 instances",
    });
  });

  it("reports more instances than desired as ScalingDown", async () => {
    const { run } = publishScope({
      scale: { plan: plan({ live: 3, converged: false }) },
      desired: 1,
    });
    expect((await run(publishPhase))?.ready).toEqual({
      status: "False",
      reason: "ScalingDown",
      message: "3 instances, 1 desired",
    });
  });

  it("reports instances not yet available as InstancesNotReady", async () => {
    const { run } = publishScope({
      scale: { plan: plan({ live: 2, available: 1, converged: false }) },
    });
    expect(await run(publishPhase)).toEqual({
      ready: {
        status: "False",
        reason: "InstancesNotReady",
        message: "1 of 2 instances available",
      },
      requeueAfterMs: POLL_MS,
    });
  });

  it("reports progress, not a drain, while Machines leave and the plan still acts", async () => {
    const action = { kind: "setReplicas", replicas: 3, reason: "ScaleUp" } as const;
    const { run } = publishScope({
      machines: leaving(["i3"]),
      desired: 3,
      scale: { plan: plan({ live: 2, actions: [action], converged: false }) },
    });
    expect((await run(publishPhase))?.ready).toMatchObject({
      reason: "ScalingUp",
      message: "2 of 3 instances",
    });
  });

  it("is never Ready while something is planned, even on a converged count", async () => {
    const action = { kind: "setReplicas", replicas: 2, reason: "ScaleDown" } as const;
    const { run } = publishScope({ scale: { plan: plan({ actions: [action] }) } });
    expect((await run(publishPhase))?.ready.status).toBe("False");
  });
});

describe("publish: a capacity the autoscaler cannot read", () => {
  const capacityProblem = {
    status: "False",
    reason: "InvalidCapacity",
    message: 'capacity returned what cannot be published: capacity["cpu"] is "lots"',
    retryAfterMs: 5_000,
  } as const;

  it("makes a pool that is otherwise Ready not Ready, coming back when the problem says", async () => {
    const { run, scope } = publishScope({ capacityProblem });
    expect(await run(publishPhase)).toEqual({
      ready: {
        status: "False",
        reason: "InvalidCapacity",
        message: 'capacity returned what cannot be published: capacity["cpu"] is "lots"',
      },
      requeueAfterMs: 5_000,
    });
    // Everything else is published as ever.
    expect(scope.pool.status).toMatchObject({ replicas: 2, ready: true });
  });

  it("gives way to what the pool is doing: progress says more than the capacity", async () => {
    const action = { kind: "setReplicas", replicas: 4, reason: "ScaleUp" } as const;
    const { run } = publishScope({
      capacityProblem,
      scale: { plan: plan({ live: 2, actions: [action], converged: false }) },
      desired: 4,
    });
    expect((await run(publishPhase))?.ready.reason).toBe("ScalingUp");
  });
});

describe("publish: minReadySeconds", () => {
  it("looks again when the next Ready Node becomes available, if that is sooner than a poll", async () => {
    const waiting = plan({ available: 1, converged: false });
    const soon = publishScope({ scale: { plan: waiting, nodesAvailableInMs: 30 } });
    expect(await soon.run(publishPhase)).toMatchObject({
      ready: {
        status: "False",
        reason: "InstancesNotReady",
        message: "1 of 2 instances available",
      },
      requeueAfterMs: 30,
    });
    const later = publishScope({ scale: { plan: waiting, nodesAvailableInMs: 60_000 } });
    expect((await later.run(publishPhase))?.requeueAfterMs).toBe(POLL_MS);
  });
});
