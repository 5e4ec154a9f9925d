// Deliberately broken providers: the example provider with one bug added, the way such bugs ship.
// Some must fail the conformance suite with a message that names the invariant they break; the
// runaway ones must be stopped by the kit with a named Ready reason and a Warning Event. Each variant
// is measured (time to the failure or the reason, mutating cloud calls) and the table printed.

import type { FakeScalingCloud } from "@capi-ts/examples";
import {
  type FakeCloudConformanceOptions,
  FakeCloudMachinePool,
  fakeCloudConformance,
  resourceName,
} from "@capi-ts/examples";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { type PoolPhase, type ReadyState, replacePhase } from "@capi-ts/sdk/provider";
import { EventResource, KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import { type ConformanceScenario, MachinePoolConformance, scaled } from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";

type Pool = KubernetesObject & {
  spec?: { providerIDList?: string[]; replicas?: number };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
};
type Wrap = NonNullable<FakeCloudConformanceOptions["wrapDriver"]>;

const Pools: ResourceDescriptor<Pool> = {
  group: FakeCloudMachinePool.group,
  version: FakeCloudMachinePool.storageVersion,
  kind: FakeCloudMachinePool.kind,
  plural: FakeCloudMachinePool.plural,
  scope: "Namespaced",
  subresources: { status: true },
};
const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Pool>;

/** One row of the printed table. */
interface Measured {
  readonly variant: string;
  /** The suite's failure (its check id) or the pool's Ready reason. */
  readonly outcome: string;
  /** From the scenario's start (suite failure) or the pool's creation (Ready reason). */
  readonly ms: number;
  /** Mutating cloud calls until then (the suite's scenario, or creating the pool, included). */
  readonly mutating: number;
  /** Mutating cloud calls in the hold window after the reason was set (a stopped runaway: 0). */
  readonly afterStop?: number;
  /** The mutating operations counted, e.g. `createGroup, updateGroup×3`. */
  readonly operations: string;
}

const table: Measured[] = [];

afterAll(() => {
  if (table.length === 0) return;
  const head = ["variant", "outcome", "seconds", "mutating calls", "after the stop", "operations"];
  const rows = table.map((r) => [
    r.variant,
    r.outcome,
    (r.ms / 1000).toFixed(2),
    String(r.mutating),
    r.afterStop === undefined ? "-" : String(r.afterStop),
    r.operations,
  ]);
  const widths = head.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length)),
  );
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ");
  console.log(
    [
      "broken variants:",
      line(head),
      widths.map((w) => "-".repeat(w)).join("-|-"),
      ...rows.map(line),
    ].join("\n"),
  );
});

/** The fake cloud's last call, to count from. */
const mark = (cloud: FakeScalingCloud | undefined): number => cloud?.calls().at(-1)?.seq ?? 0;

/** The mutating calls since `since`: how many, and which operations (every writer: the provider, and a sidecar playing one). */
function mutatingSince(
  cloud: FakeScalingCloud | undefined,
  since: number,
): { count: number; operations: string } {
  const calls = cloud?.calls({ mutating: true, afterSeq: since }) ?? [];
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.operation, (counts.get(call.operation) ?? 0) + 1);
  const operations = [...counts].map(([op, n]) => (n === 1 ? op : `${op}×${n}`)).join(", ");
  return { count: calls.length, operations: operations || "none" };
}

/**
 * Runs one scenario against a broken variant of the example provider; returns its failure, and
 * records the time from the scenario's start to it and the mutating cloud calls made meanwhile.
 */
/**
 * The kit's `autoscalerBounds` phase with a bug: once it has reported a condition, a reconcile that
 * has none to report keeps the last one (the complaint outlives the annotations).
 */
function sticky<Spec>(defaults: readonly PoolPhase<Spec, unknown>[]): PoolPhase<Spec, unknown> {
  const original = defaults.find((p) => p.name === "autoscalerBounds");
  if (!original) throw new Error("no autoscalerBounds phase");
  const last = new Map<string, ReadyState>();
  return {
    ...original,
    run(scope) {
      const pool = scope.pool.metadata?.name ?? "";
      const remembering = new Proxy(scope, {
        get(target, property) {
          if (property !== "write") {
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === "function" ? value.bind(target) : value;
          }
          return (section: never, value: { condition?: ReadyState }) => {
            if (value.condition) last.set(pool, value.condition);
            const condition = value.condition ?? last.get(pool);
            target.write(section, { ...value, condition } as never);
          };
        },
      });
      return original.run(remembering);
    },
  };
}

async function failureOf(
  scenario: ConformanceScenario,
  broken: FakeCloudConformanceOptions,
  variant: string,
): Promise<Error> {
  let cloud: FakeScalingCloud | undefined;
  const suite = new MachinePoolConformance(
    fakeCloudConformance({
      ...broken,
      wrapDriver: (driver, fake) => {
        cloud = fake;
        return broken.wrapDriver ? broken.wrapDriver(driver, fake) : driver;
      },
      // Core (emulated as v1.14.2) reconciles a MachinePool at most once a second: converging takes a few.
      suite: { timeouts: { convergeMs: 15_000, steadyStateMs: 800, settleMs: 200 } },
    }),
  );
  await suite.start();
  const since = mark(cloud);
  const started = performance.now();
  try {
    await suite.run(scenario);
  } catch (error) {
    const failure = error as Error;
    const ms = performance.now() - started;
    table.push({
      variant,
      outcome: /^\[([^\]]+)\]/.exec(failure.message)?.[1] ?? failure.message.slice(0, 40),
      ms,
      mutating: mutatingSince(cloud, since).count,
      operations: mutatingSince(cloud, since).operations,
    });
    // Each test names the check that must fail (the message starts with it): a hang until the test's
    // own timeout fails there, whatever the clock said. The time is recorded, not asserted: how long
    // a wait of the suite runs depends on the machine's load and on the progress it sees.
    return failure;
  } finally {
    await suite.stop();
  }
  throw new Error(`the broken provider passed the "${scenario}" scenario`);
}

/** How long a stopped runaway is watched for further mutating calls: several resyncs of the hook. */
const HOLD_MS = 2000;

/**
 * Creates a pool of 3 on a broken variant and waits for the kit to stop it with `reason` on Ready;
 * returns the measurement (recorded in the table) and the Warning Events of that reason.
 */
async function runawayStop(
  variant: string,
  reason: string,
  wrapDriver: Wrap,
): Promise<{ measured: Measured; message: string; warnings: number }> {
  let result: { measured: Measured; message: string; warnings: number } | undefined;
  let cloud: FakeScalingCloud | undefined;
  const suite = new MachinePoolConformance(
    fakeCloudConformance({
      wrapDriver: (driver, fake) => {
        cloud = fake;
        return wrapDriver(driver, fake);
      },
      suite: {
        extraScenarios: [
          {
            id: "runaway",
            title: `${variant} stops with Ready reason ${reason}`,
            async run(ctx) {
              const client = new KubeClient(ctx.kubeConfig);
              const since = mark(cloud);
              const started = performance.now();
              const pool = await ctx.createPool(3);
              let ready: { reason?: string; message?: string } | undefined;
              let seen: string | undefined;
              while (performance.now() - started < 20_000) {
                const object = await client.get(Pools, pool);
                ready = object.status?.conditions?.find((c) => c.type === "Ready");
                seen = ready?.reason;
                if (seen === reason) break;
                await new Promise((r) => setTimeout(r, 20));
              }
              if (seen !== reason) {
                throw new Error(
                  `${variant}: Ready reason ${seen ?? "(none)"} after 20 s, expected ${reason} (mutating calls: ${mutatingSince(cloud, since).operations})`,
                );
              }
              const ms = performance.now() - started;
              const until = mutatingSince(cloud, since);
              await new Promise((r) => setTimeout(r, HOLD_MS));
              const events = await client.list(EventResource, { namespace: pool.namespace });
              const measured: Measured = {
                variant,
                outcome: `Ready=False ${reason}`,
                ms,
                mutating: until.count,
                afterStop: mutatingSince(cloud, since).count - until.count,
                operations: until.operations,
              };
              table.push(measured);
              result = {
                measured,
                message: ready?.message ?? "",
                warnings: events.items.filter(
                  (e) =>
                    e.type === "Warning" &&
                    e.reason === reason &&
                    e.involvedObject?.name === pool.name,
                ).length,
              };
            },
          },
        ],
      },
    }),
  );
  await suite.start();
  try {
    await suite.run("runaway");
  } finally {
    await suite.stop();
  }
  if (!result) throw new Error(`${variant}: the scenario ended without a measurement`);
  return result;
}

/** A loop next to the provider, every 50 ms, with the provider's own field manager. */
function everyTick(
  kubeConfig: ConstructorParameters<typeof KubeClient>[0],
  tick: (client: KubeClient) => Promise<void>,
): () => void {
  const client = new KubeClient(kubeConfig, { fieldManager: "fakecloud-provider" });
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    tick(client)
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  }, 50);
  return () => clearInterval(timer);
}

describe("conformance: deliberately broken providers fail with the invariant named", {
  timeout: scaled(60_000),
}, () => {
  it("unsorted providerIDList (IDs published in the cloud's list order)", async () => {
    const error = await failureOf(
      "scale",
      {
        sidecar: (env) =>
          everyTick(env.kubeConfig, async (client) => {
            for (const pool of (await client.list(Pools, { namespace: "default" })).items) {
              const ids = pool.spec?.providerIDList ?? [];
              if (ids.length < 2 || ids[0] !== [...ids].sort()[0]) continue;
              await client.mergePatch(Pools, pool, {
                spec: { providerIDList: [...ids].reverse() },
              });
            }
          }),
      },
      "unsorted providerIDList",
    );
    expect(error.message).toMatch(
      /^\[status\.providerIDList\] providerIDList must be sorted: got \[/,
    );
  });

  it("pause ignored (a loop keeps the group at MachinePool.spec.replicas whatever the Cluster says)", async () => {
    const error = await failureOf(
      "pause",
      {
        sidecar: (env, cloud) =>
          everyTick(env.kubeConfig, async (client) => {
            for (const mp of (await client.list(MachinePools, { namespace: "default" })).items) {
              const name = resourceName({
                namespace: "default",
                name: mp.metadata?.name ?? "",
                clusterName: "conformance",
                uid: "",
              });
              const group = await cloud.client.describeGroup(name);
              const replicas = mp.spec?.replicas;
              if (group && replicas !== undefined && group.desiredCapacity !== replicas) {
                await cloud.client.setDesiredCapacity(name, replicas);
              }
            }
          }),
      },
      "pause ignored",
    );
    expect(error.message).toMatch(
      /^\[pause\.noCloudCallsWhilePaused\] the provider made \d+ cloud call\(s\) in \d+ ms while the Cluster was paused/,
    );
  });

  it("watch filter ignored (the manager runs without the filter it was given)", async () => {
    const error = await failureOf(
      "watchFilter",
      { ignoreWatchFilter: true },
      "watch filter ignored",
    );
    expect(error.message).toMatch(
      /^\[runtime\.watchFilter\] conf-1 is labelled cluster\.x-k8s\.io\/watch-filter: another-team, outside the provider's watch filter "capi-ts-conformance", but it added the finalizer\(s\) fakecloudmachinepool/,
    );
  });

  it("Nodes not awaited in a rollout (readiness: instance, Nodes joining 500 ms late)", async () => {
    const error = await failureOf(
      "nodesJoinLate",
      { controller: { readiness: "instance" } },
      "Nodes not awaited in a rollout",
    );
    expect(error.message).toMatch(
      /^\[rollout\.availability\] Ready Nodes dropped to [0-2] during the rollout; must stay ≥ replicas − maxUnavailable = 3/,
    );
  });

  it("minReadySeconds not honoured (readiness: instance counts instances, not Ready Nodes)", async () => {
    const error = await failureOf(
      "minReadySeconds",
      { controller: { readiness: "instance" } },
      "minReadySeconds not honoured",
    );
    expect(error.message).toMatch(
      /^\[availability\.minReadySeconds\] conf-1 reports Ready=True while its Node \S+ has been Ready for \d+ ms only; with minReadySeconds 3/,
    );
  });

  it("the MachinePool's taints and Node labels never applied (the nodes phase left out)", async () => {
    const error = await failureOf(
      "nodeTaintsAndLabels",
      { controller: { phases: (defaults) => defaults.filter((p) => p.name !== "nodes") } },
      "Node taints and labels not applied",
    );
    expect(error.message).toMatch(/^\[nodes\.labelsApplied\] timed out after \d+ ms waiting for/);
  });

  it("an unreachable workload cluster retried without backoff", async () => {
    const error = await failureOf(
      "workloadUnreachable",
      { clusterCache: { connectionRetryMs: 1, maxConnectionRetryMs: 1 } },
      "workload cluster retried without backoff",
    );
    expect(error.message).toMatch(
      /^\[workload\.backoff\] \d+ connections to the unreachable workload cluster in 4000 ms \(at most 8\)/,
    );
  });

  it("cluster-autoscaler bounds not widened (a driver without groupBounds)", async () => {
    const error = await failureOf(
      "autoscalerBounds",
      { wrapDriver: (driver) => ({ ...driver, groupBounds: undefined }) },
      "autoscaler bounds not widened",
    );
    expect(error.message).toMatch(
      /^\[autoscaler\.boundsWidened\] the provider refuses the size 11 the autoscaler set \(Ready=False ReplicasOutOfRange: MachinePool replicas 11 is outside the group's bounds \[0, 10\]; .*\); the group's bounds are \[0, 10\], the autoscaler's \[0, 12\]/,
    );
  });

  it("an invalid-bounds complaint never cleared (the autoscalerBounds phase remembers it)", async () => {
    const error = await failureOf(
      "autoscalerBounds",
      {
        controller: {
          phases: (defaults) => replacePhase(defaults, "autoscalerBounds", sticky(defaults)),
        },
      },
      "invalid-bounds complaint never cleared",
    );
    expect(error.message).toMatch(
      /^\[autoscaler\.invalidBoundsCleared\] timed out after \d+ ms waiting for conf-1 to drop its InvalidAutoscalerBounds complaint .*: the condition AutoscalerBounds still has reason InvalidAutoscalerBounds after the autoscaler's annotations were removed/,
    );
  });

  it("cluster-autoscaler's taint ignored (readiness: instance, so the kit sees no Node)", async () => {
    const error = await failureOf(
      "autoscalerDeleteTainted",
      { controller: { readiness: "instance" } },
      "autoscaler's taint ignored",
    );
    expect(error.message).toMatch(
      /^\[autoscaler\.taintedNodeRemoved\] the autoscaler tainted the Node of fake:\/\/\/zone-[ab]\/i-\w+ ToBeDeletedByClusterAutoscaler and lowered the replicas to 2, leaving \[/,
    );
  });

  it("no drain before terminate (readiness: instance, so the kit sees no Node)", async () => {
    const error = await failureOf(
      "drainBeforeTerminate",
      { controller: { readiness: "instance" } },
      "no drain before terminate",
    );
    expect(error.message).toMatch(/^\[drain\.(heldWhileBlocked|cordoned)\] /);
  });

  it("a write once the pool is quiet, on a cloud that refuses calls (measured again, fails on the 3rd)", async () => {
    const error = await failureOf(
      "scale",
      {
        // 1.1 s after the pool last changed, a refused cloud call and a heartbeat annotation with the
        // provider's field manager: after the suite's quiet wait of 1 s, in every window it measures.
        sidecar: (env, cloud) => {
          cloud.faults.inject({ kind: "throttle", operations: ["listLaunchTemplates"] });
          const changed = new Map<string, { version: string; at: number }>();
          let beat = 0;
          return everyTick(env.kubeConfig, async (client) => {
            for (const pool of (await client.list(Pools, { namespace: "default" })).items) {
              const name = pool.metadata?.name ?? "";
              const version = pool.metadata?.resourceVersion ?? "";
              const last = changed.get(name);
              if (last?.version !== version) {
                changed.set(name, { version, at: performance.now() });
                continue;
              }
              if (performance.now() - last.at < 1_100) continue;
              await cloud.client.listLaunchTemplates().catch(() => undefined);
              await client.mergePatch(Pools, pool, {
                metadata: { annotations: { "example.com/heartbeat": String(++beat) } },
              });
            }
          });
        },
      },
      "a write once quiet, calls refused",
    );
    expect(error.message).toMatch(
      /^\[steadyState\.zeroWrites\] expected 0 API writes by the provider \(fakecloud-provider\) at steady state \(conf-1, 2 replicas\), got \d+ in 800 ms: patch fakecloudmachinepools conf-1 \(metadata\.annotations\.example\.com\/heartbeat\).* \(measured 3 times: cloud calls the cloud refused were being retried\)$/,
    );
  });

  it("finalizer never removed (the group delete is dropped, so the pool waits forever)", async () => {
    const error = await failureOf(
      "deletionInFlight",
      {
        wrapDriver: (driver) => ({ ...driver, deleteGroup: async () => undefined }),
      },
      "finalizer never removed",
    );
    expect(error.message).toMatch(
      /^\[deletion\.completes\] timed out after \d+ ms waiting for conf-1 to be deleted \(no progress for \d+ ms[^)]*\): the InfraMachinePool still exists .*finalizers \["fakecloudmachinepool\.infrastructure\.cluster\.x-k8s\.io"\]/,
    );
  });
});

describe("provider kit: runaway drivers are stopped within seconds with a named Ready reason", {
  timeout: 60_000,
}, () => {
  // A runaway repeats a mutating call on every reconcile; stopped, it has made a handful at most.
  const MAX_MUTATING = 6;
  // Detection takes a few reconciles (50 ms polls, 500 ms resyncs) after the pool is created.
  const MAX_MS = 10_000;

  async function expectStopped(variant: string, reason: string, wrap: Wrap): Promise<string> {
    const { measured, message, warnings } = await runawayStop(variant, reason, wrap);
    expect(measured.ms).toBeLessThan(MAX_MS);
    expect(measured.mutating).toBeLessThanOrEqual(MAX_MUTATING);
    expect(measured.afterStop).toBe(0);
    expect(warnings).toBeGreaterThanOrEqual(1);
    expect(message).toMatch(/the kit makes no cloud change to this pool until this is fixed$/);
    return message;
  }

  it("stamp not stored (template versions listed without the stamp they were created with)", async () => {
    await expectStopped("stamp not stored", "TemplateStampNotStored", (driver) => ({
      ...driver,
      getTemplate: async (ctx) =>
        (await driver.getTemplate(ctx)).map((version) => ({ ...version, stamp: undefined })),
      createTemplateVersion: async (ctx, input) => ({
        ...(await driver.createTemplateVersion(ctx, input)),
        stamp: undefined,
      }),
    }));
  });

  it("impure templateInputs (a value that changes on every call)", async () => {
    let renders = 0;
    await expectStopped("impure templateInputs", "TemplateInputsNotPure", (driver) => ({
      ...driver,
      templateInputs: (ctx) => ({
        ...(driver.templateInputs(ctx) as Record<string, unknown>),
        renderedAt: ++renders,
      }),
    }));
  });

  it("settings never converge (groupSettings lists zones unsorted, the cloud reports them sorted)", async () => {
    await expectStopped("settings never converge", "SettingsNotConverging", (driver) => ({
      ...driver,
      groupSettings: (ctx) => {
        const settings = driver.groupSettings(ctx);
        return { ...settings, zones: [...settings.zones].reverse() };
      },
    }));
  });

  it("duplicate provider IDs (a providerID codec that drops the instance ID)", async () => {
    const message = await expectStopped(
      "duplicate provider IDs",
      "DuplicateProviderIDs",
      (driver) => ({
        ...driver,
        getGroup: async (ctx) => {
          const group = await driver.getGroup(ctx);
          return (
            group && {
              ...group,
              instances: group.instances.map((i) => ({
                ...i,
                providerID: i.providerID.replace(/[^/]+$/, "vm"),
              })),
            }
          );
        },
      }),
    );
    expect(message).toMatch(/fake:\/\/\/zone-[ab]\/vm/);
  });
});
