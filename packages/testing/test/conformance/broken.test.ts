// Deliberately broken providers: each must fail the conformance suite with a message that names the
// invariant it breaks. They are the example provider with one bug added, the way such bugs ship.
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  type FakeCloudConformanceOptions,
  FakeCloudMachinePool,
  fakeCloudConformance,
  resourceName,
} from "../../../examples/src/provider/index.js";
import { type ConformanceScenario, MachinePoolConformance } from "../../src/index.js";

type Pool = KubernetesObject & { spec?: { providerIDList?: string[]; replicas?: number } };

const Pools: ResourceDescriptor<Pool> = {
  group: FakeCloudMachinePool.group,
  version: FakeCloudMachinePool.storageVersion,
  kind: FakeCloudMachinePool.kind,
  plural: FakeCloudMachinePool.plural,
  scope: "Namespaced",
  subresources: { status: true },
};
const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Pool>;

/** Runs one scenario against a broken variant of the example provider; returns its failure. */
async function failureOf(
  scenario: ConformanceScenario,
  broken: FakeCloudConformanceOptions,
): Promise<Error> {
  const suite = new MachinePoolConformance(
    fakeCloudConformance({
      ...broken,
      // Core (emulated as v1.14.2) reconciles a MachinePool at most once a second: converging takes a few.
      suite: { timeouts: { convergeMs: 15_000, steadyStateMs: 800, settleMs: 200 } },
    }),
  );
  await suite.start();
  try {
    await suite.run(scenario);
  } catch (error) {
    return error as Error;
  } finally {
    await suite.stop();
  }
  throw new Error(`the broken provider passed the "${scenario}" scenario`);
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
  timeout: 60_000,
}, () => {
  it("unsorted providerIDList (IDs published in the cloud's list order)", async () => {
    const error = await failureOf("scale", {
      sidecar: (env) =>
        everyTick(env.kubeConfig, async (client) => {
          for (const pool of (await client.list(Pools, { namespace: "default" })).items) {
            const ids = pool.spec?.providerIDList ?? [];
            if (ids.length < 2 || ids[0] !== [...ids].sort()[0]) continue;
            await client.mergePatch(Pools, pool, { spec: { providerIDList: [...ids].reverse() } });
          }
        }),
    });
    expect(error.message).toMatch(
      /^\[status\.providerIDList\] providerIDList must be sorted: got \[/,
    );
  });

  it("pause ignored (a loop keeps the group at MachinePool.spec.replicas whatever the Cluster says)", async () => {
    const error = await failureOf("pause", {
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
    });
    expect(error.message).toMatch(
      /^\[pause\.noCloudCallsWhilePaused\] the provider made \d+ cloud call\(s\) in \d+ ms while the Cluster was paused/,
    );
  });

  it("watch filter ignored (the manager runs without the filter it was given)", async () => {
    const error = await failureOf("watchFilter", { ignoreWatchFilter: true });
    expect(error.message).toMatch(
      /^\[runtime\.watchFilter\] conf-1 is labelled cluster\.x-k8s\.io\/watch-filter: another-team, outside the provider's watch filter "capi-ts-conformance", but it added the finalizer\(s\) fakecloudmachinepool/,
    );
  });

  it("Nodes not awaited in a rollout (readiness: instance, Nodes joining 500 ms late)", async () => {
    const error = await failureOf("nodesJoinLate", { controller: { readiness: "instance" } });
    expect(error.message).toMatch(
      /^\[rollout\.availability\] Ready Nodes dropped to [0-2] during the rollout; must stay ≥ replicas − maxUnavailable = 3/,
    );
  });

  it("an unreachable workload cluster retried without backoff", async () => {
    const error = await failureOf("workloadUnreachable", {
      clusterCache: { connectionRetryMs: 1, maxConnectionRetryMs: 1 },
    });
    expect(error.message).toMatch(
      /^\[workload\.backoff\] \d+ connections to the unreachable workload cluster in 4000 ms \(at most 8\)/,
    );
  });

  it("finalizer never removed (the group delete is dropped, so the pool waits forever)", async () => {
    const error = await failureOf("deletionInFlight", {
      wrapDriver: (driver) => ({ ...driver, deleteGroup: async () => undefined }),
    });
    expect(error.message).toMatch(
      /^\[deletion\.completes\] timed out after 15000 ms waiting for conf-1 to be deleted: the InfraMachinePool still exists .*finalizers \["fakecloudmachinepool\.infrastructure\.cluster\.x-k8s\.io"\]/,
    );
  });
});
