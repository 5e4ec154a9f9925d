// Benchmark of the pure engines behind the in-memory API server (schema validation/pruning/defaulting,
// CEL rules, server-side apply, JSON patch), run after the server benchmark by scripts/bench-apiserver.ts
// (`./dev bench apiserver`). Each figure is N calls on CAPI-shaped objects; no HTTP involved.
import { jsonPatch, serverSideApply } from "../src/apiserver/merge/index.js";
import { capiMachinePool, crdSchema } from "../src/apiserver/schema/crd-fixtures.test-support.js";
import { compileStructuralSchema } from "../src/apiserver/schema/index.js";

const N = 10_000;

function time(label: string, fn: (i: number) => unknown): void {
  for (let i = 0; i < 200; i++) fn(i);
  const start = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  const ms = performance.now() - start;
  console.log(`${label}: ${ms.toFixed(0)} ms for ${N} (${((ms * 1000) / N).toFixed(1)} µs each)`);
}

// Calibration: this loop takes ~10 ms on a 2024 laptop core; scale the figures below accordingly.
const calibrationStart = performance.now();
let sum = 0;
for (let i = 0; i < 1e7; i++) sum += i;
console.log(
  `engines: calibration loop (1e7 integer additions): ${(performance.now() - calibrationStart).toFixed(0)} ms${sum > 0 ? "" : "?"}`,
);

const compileStart = performance.now();
const machinePools = compileStructuralSchema(
  crdSchema("capi/cluster.x-k8s.io_machinepools.yaml", "v1beta2"),
);
const kubeadmConfigs = compileStructuralSchema(
  crdSchema("capi/bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml", "v1beta2"),
);
const awsMachinePools = compileStructuralSchema(
  crdSchema("providers/aws/infrastructure.cluster.x-k8s.io_awsmachinepools.yaml", "v1beta2"),
);
console.log(
  `engines: compile 3 CRD schemas (MachinePool, KubeadmConfig, AWSMachinePool): ${(performance.now() - compileStart).toFixed(0)} ms`,
);

const machinePool = {
  ...(capiMachinePool() as { spec: { replicas: number; providerIDList: string[] } }),
  status: {
    phase: "Running",
    conditions: ["Available", "Ready", "ScalingUp", "ScalingDown", "Remediating"].map((type) => ({
      type,
      status: "True",
      reason: "Ok",
      message: "",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    })),
  },
};
// Twenty instances: the list the server-side apply figures below rewrite.
machinePool.spec.providerIDList = Array.from({ length: 20 }, (_, i) => `aws:///us-east-1a/i-${i}`);
const kubeadmConfig = {
  apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
  kind: "KubeadmConfig",
  metadata: { name: "k" },
  spec: {
    clusterConfiguration: {
      apiServer: {
        extraArgs: Array.from({ length: 10 }, (_, i) => ({ name: `flag-${i}`, value: "x" })),
      },
    },
    joinConfiguration: {
      nodeRegistration: { kubeletExtraArgs: [{ name: "node-labels", value: "a=b" }] },
    },
  },
};

time("engines: validate a MachinePool (create)", () => machinePools.validate(machinePool));
const changed = JSON.parse(JSON.stringify(machinePool)) as typeof machinePool;
changed.spec.replicas = 4;
time("engines: validate a MachinePool (update, ratcheting)", () =>
  machinePools.validate(changed, machinePool),
);
time("engines: validate a KubeadmConfig (CEL rules)", () => kubeadmConfigs.validate(kubeadmConfig));
time("engines: prune + default + validate an AWSMachinePool", () => {
  const obj: Record<string, unknown> = {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "AWSMachinePool",
    metadata: { name: "a" },
    spec: {
      awsLaunchTemplate: { instanceType: "m5.large", instanceMetadataOptions: {} },
      unknown: 1,
    },
  };
  awsMachinePools.prune(obj);
  awsMachinePools.applyDefaults(obj);
  return awsMachinePools.validate(obj);
});
let live = (
  serverSideApply({
    live: undefined,
    applied: machinePool,
    manager: "capi",
    force: false,
    schema: machinePools.root,
    now: "2026-01-01T00:00:00Z",
  }) as { object: Record<string, unknown> }
).object;
time("engines: server-side apply of a MachinePool (alternating managers, force)", (i) => {
  const applied = JSON.parse(JSON.stringify(machinePool)) as typeof machinePool;
  applied.spec.replicas = i % 7;
  const result = serverSideApply({
    live,
    applied,
    manager: i % 2 === 0 ? "capi" : "autoscaler",
    force: true,
    schema: machinePools.root,
    now: "2026-01-01T00:00:00Z",
  });
  if ("object" in result) live = result.object;
  return result;
});
time("engines: JSON patch (test + replace + add) on a MachinePool", (i) =>
  jsonPatch(machinePool, [
    { op: "test", path: "/spec/clusterName", value: "c1" },
    { op: "replace", path: "/spec/replicas", value: i },
    { op: "add", path: "/metadata/labels/x", value: "y" },
  ]),
);
