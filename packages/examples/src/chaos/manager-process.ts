/**
 * One provider replica as its own OS process, for the chaos suite: the example provider with leader
 * election, on the shared cloud behind {@link cloudRpcClient}. It owns the process as a production
 * binary does (SIGTERM: graceful; lost leadership: exit 1). Configured by environment:
 * `CHAOS_KUBECONFIG`, `CHAOS_CLOUD_URL`, `CHAOS_IDENTITY`, `CHAOS_LOG_LEVEL` (default silent).
 *
 * @module
 */
import { Manager, machinePoolController } from "@capi-ts/sdk";
import { KubeConfig } from "@kubernetes/client-node";
import { fakeCloudDriver } from "../provider/driver.js";
import { FakeCloudMachinePool } from "../provider/kind.js";
import { cloudRpcClient } from "./rpc.js";
import { CHAOS_LEASE } from "./timings.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(required("CHAOS_KUBECONFIG"));
const identity = required("CHAOS_IDENTITY");
const manager = new Manager({
  kubeConfig,
  name: "fakecloud-provider",
  leaderElection: { namespace: "default", identity, ...CHAOS_LEASE },
  gracefulShutdownTimeoutMs: 1000,
  handleSignals: true,
  logger: { level: (process.env.CHAOS_LOG_LEVEL ?? "silent") as "silent" },
});
machinePoolController(
  fakeCloudDriver(cloudRpcClient(required("CHAOS_CLOUD_URL"), identity), {
    defaultZones: ["zone-a", "zone-b"],
    busyRetryMs: 200,
  }),
  {
    manager,
    kind: FakeCloudMachinePool,
    pollIntervalMs: 200,
    resyncPeriodMs: 2000,
    // The suite judges leadership and cloud effects on a cloud without kubelets: availability is
    // counted on running instances, not on Nodes of a workload cluster (the default, "node").
    readiness: "instance",
  },
);
void manager.elected().then((leading) => {
  if (leading) process.stdout.write(`leading ${identity}\n`);
});
manager.start().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${identity}: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
