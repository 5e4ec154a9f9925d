// The InfraMachinePool conformance suite (from @capi-ts/testing) against this provider, with the
// in-memory cloud and the CAPI core emulator; every pool version is checked against the contract.
import { Manager, machinePoolController } from "@capi-ts/sdk";
import { KubeClient, NamespaceResource, SecretResource } from "@capi-ts/sdk/runtime";
import type { ConformancePool } from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";
import { fooCredentials } from "../src/credentials.js";
import { fooDriver, groupNameOf, providerIdOf } from "../src/driver.js";
import { FooMachinePool } from "../src/kind.js";
import { MemoryCloud } from "./memory-cloud.js";
import { joiningNodes } from "./nodes.js";

const group = (pool: ConformancePool) => groupNameOf({ pool: { ...pool, uid: "" } });

/** The provider's default credentials, as a release would have them in its own namespace. */
const CREDENTIALS = { namespace: "foo-system", name: "foo-credentials" };

/** Writes the credentials Secret the provider reads (kept if a previous run made it). */
async function writeCredentials(client: KubeClient, token: string): Promise<void> {
  const namespace = {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: CREDENTIALS.namespace },
  };
  await client.create(NamespaceResource, namespace).catch(() => undefined);
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...CREDENTIALS },
    stringData: { endpoint: "memory://foo", token },
  };
  await client.create(SecretResource, secret).catch(async () => {
    await client.mergePatch(SecretResource, CREDENTIALS, { stringData: secret.stringData });
  });
}

runMachinePoolConformance({
  name: "FooMachinePool",
  kind: FooMachinePool,
  poolSpec: { instanceType: "small", minSize: 0, maxSize: 10 },
  templateChange: (spec) => ({ ...spec, instanceType: "large" }),
  // Another instance type, another capacity: the scaleFromZero scenario checks the autoscaler sees it.
  capacityChange: (spec) => ({ ...spec, instanceType: "large" }),
  timeouts: { steadyStateMs: 800, settleMs: 250 },
  async startProvider(env) {
    const cloud = new MemoryCloud(joiningNodes(env.workloadKubeConfig));
    // The cloud is reached only through the credentials hook: the Secret names its endpoint and token.
    await writeCredentials(
      new KubeClient(env.kubeConfig, { fieldManager: "foo-test" }),
      cloud.token,
    );
    const manager = new Manager({
      kubeConfig: env.kubeConfig,
      name: "foo-provider",
      logger: { level: "silent" },
      gracefulShutdownTimeoutMs: 2000,
      // The suite labels its objects and checks that a pool of another team is never touched (R20).
      watchFilterValue: env.watchFilterValue,
    });
    machinePoolController(fooDriver({ defaultZones: ["zone-a", "zone-b"] }), {
      manager,
      kind: FooMachinePool,
      credentials: fooCredentials({
        connect: (credentials) => cloud.connect(credentials),
        defaultSecret: CREDENTIALS,
        // The default credentials serve only listed namespaces: the suite makes its Clusters in
        // "default" (and the move scenario in "conf-move"), none of which names an identity.
        defaultCredentialsNamespaces: ["default", "conf-move"],
      }),
      pollIntervalMs: 50,
      resyncPeriodMs: 500,
      readiness: "node",
    });
    const running = manager.start();
    await manager.elected();
    const instancesOf = (pool: ConformancePool) => cloud.groups.get(group(pool))?.instances ?? [];
    return {
      identity: "foo-provider",
      cloud: {
        liveProviderIds: (pool) => instancesOf(pool).map((i) => providerIdOf(i.zone, i.id)),
        callCount: (filter = {}) =>
          cloud.calls.filter(
            (call) =>
              (filter.mutating === undefined || call.mutating === filter.mutating) &&
              (!filter.resizes || call.resize),
          ).length,
        // The pool's latest template version (numbers only grow): a token rotation must make one.
        templateVersionCount: (pool) =>
          Number(cloud.templates.get(group(pool))?.versions.at(-1)?.version ?? 0),
        resourcesLeft: (pool) => [
          ...(cloud.groups.has(group(pool)) ? [`group ${group(pool)}`] : []),
          ...(cloud.templates.has(group(pool)) ? [`template ${group(pool)}`] : []),
        ],
        actors: {
          setDesiredReplicas: (pool, replicas) => cloud.setDesired(group(pool), replicas),
          terminateInstance: (pool, providerID) =>
            cloud.outOfBandTerminate(
              group(pool),
              providerID.slice(providerID.lastIndexOf("/") + 1),
            ),
        },
      },
      async stop() {
        await manager.stop();
        await running.catch(() => undefined);
        await cloud.flush();
      },
    };
  },
});
