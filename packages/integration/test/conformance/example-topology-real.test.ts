// The example provider (FakeCloudMachinePool) under core's topology controller: a Cluster of the
// ClusterClass flavor the scaffold ships (rendered by the same function for this kind) is created and
// upgraded, on real CAPI core with the ClusterTopology gate on, the kind's admission webhooks served.
// Only the ClusterClass scenarios (and cleanup) run here, with the kind's webhooks served; the other
// real-core suites run them too, after their other scenarios, without webhooks.
// Then the same upgrade with a pool whose spec pins the image: nothing may roll, the scenario must fail
// naming the instances left, and the kit must say why on VersionRollout. Skipped, loudly, when core is
// not built.
import { FakeCloudMachinePool, fakeCloudConformance } from "@capi-ts/examples";
import { KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  findCapiCoreBinary,
  findControlPlaneBinaries,
  MachinePoolConformance,
  scaled,
} from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";
import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";

type Pool = KubernetesObject & {
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
};
const Pools = FakeCloudMachinePool.resource as unknown as ResourceDescriptor<Pool>;

const binaries = findControlPlaneBinaries();
if (binaries && findCapiCoreBinary(binaries)) {
  runMachinePoolConformance(
    fakeCloudConformance({
      // The kind's webhooks, called by the API server: the topology controller's applies pass them.
      webhooks: true,
      suite: {
        core: "real",
        scenarios: ["topologyCreate", "topologyUpgrade", "cleanup"],
        timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 180_000 },
      },
    }),
  );

  describe("a pool whose spec pins the image, upgraded through the topology", () => {
    it(
      "rolls nothing: topologyUpgrade fails naming the instances left, the pool says VersionNotRolled",
      async () => {
        const seen: string[] = [];
        const suite = new MachinePoolConformance(
          fakeCloudConformance({
            // Every reconcile's VersionRollout, as the kit writes it (the scenario deletes the pool).
            sidecar: (env) => {
              const client = new KubeClient(env.kubeConfig, { fieldManager: "observer" });
              let stopped = false;
              void (async () => {
                while (!stopped) {
                  const pools = await client
                    .list(Pools, { namespace: "default" })
                    .catch(() => ({ items: [] as Pool[] }));
                  for (const pool of pools.items) {
                    const c = pool.status?.conditions?.find((x) => x.type === "VersionRollout");
                    if (c && !seen.includes(`${c.reason}: ${c.message}`))
                      seen.push(`${c.reason}: ${c.message}`);
                  }
                  await new Promise((r) => setTimeout(r, 100));
                }
              })();
              return () => {
                stopped = true;
              };
            },
            suite: {
              core: "real",
              poolSpec: {
                instanceType: "small",
                minSize: 0,
                maxSize: 10,
                image: "fake-k8s-v1.34.1",
              },
              scenarios: ["topologyUpgrade"],
              // The suite's own budgets: the failure comes once the upgrade wait has made no progress for them.
              timeouts: { steadyStateMs: 800, settleMs: 250 },
            },
          }),
        );
        await suite.start();
        try {
          await expect(suite.run("topologyUpgrade")).rejects.toThrow(
            /\[topology\.instancesRolled\] .*2 instance\(s\) from before the upgrade still live/,
          );
        } finally {
          await suite.stop();
        }
        expect(seen).toContainEqual(
          expect.stringMatching(
            /^VersionNotRolled: the MachinePool's version changed from v1\.34\.1 to v1\.35\.0 but the driver's template inputs did not/,
          ),
        );
      },
      scaled(300_000),
    );
  });
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: the ClusterClass scenarios on real CAPI core are NOT run (no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("ClusterClass conformance on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
