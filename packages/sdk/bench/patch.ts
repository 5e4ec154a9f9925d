// What one reconcile pays in the contract layer at steady state: snapshot + change detection of an
// InfraMachinePool (no request when nothing changed), and writing the status contract fields.
import { parseArgs } from "node:util";
import { setCondition } from "../src/conditions/index.js";
import { setPoolStatus } from "../src/contract/index.js";
import { PatchHelper } from "../src/patch/index.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "100,1000,10000" },
    iterations: { type: "string", default: "200" },
  },
});
const sizes = (values.sizes ?? "").split(",").map(Number);
const iterations = Number(values.iterations);

function pool(ids: number) {
  const obj = {
    apiVersion: "infrastructure.example.com/v1beta2",
    kind: "FooMachinePool",
    metadata: {
      name: "p",
      namespace: "ns",
      generation: 3,
      resourceVersion: "42",
      labels: { "cluster.x-k8s.io/cluster-name": "c" },
    },
    spec: { instanceType: "m5.large", providerIDList: [] as string[] },
    status: {} as Record<string, unknown>,
  };
  setPoolStatus(obj, {
    providerIDs: Array.from(
      { length: ids },
      (_, i) => `aws:///eu-west-1a/i-${i.toString(16).padStart(17, "0")}`,
    ),
    replicas: ids,
    ready: true,
  });
  for (let i = 0; i < 31; i++)
    setCondition(obj, { type: `Cond${i}`, status: "True", reason: "Fine" });
  setCondition(obj, { type: "Ready", status: "True", reason: "Ready" });
  return obj;
}

function time(fn: () => void): number {
  for (let i = 0; i < Math.max(50, iterations / 2); i++) fn(); // warm up the JIT
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1e3 / iterations;
}

console.log(`patch helper benchmark (${iterations} iterations each, Node ${process.version})`);
console.log(
  "providerIDs | snapshot+noop changes (µs) | setPoolStatus same IDs (µs) | changes after 1 ID added (µs)",
);
for (const size of sizes) {
  const obj = pool(size);
  const ids = obj.spec.providerIDList.slice();
  const noop = time(() => {
    const helper = PatchHelper.snapshot(obj);
    if (helper.hasChanges(obj)) throw new Error("unexpected change");
  });
  const rewrite = time(() => {
    setPoolStatus(obj, { providerIDs: ids, replicas: size, ready: true });
  });
  const helper = PatchHelper.snapshot(obj);
  const changed = structuredClone(obj);
  changed.spec.providerIDList = [...ids, "aws:///eu-west-1a/i-zzzzzzzzzzzzzzzzz"];
  const diff = time(() => {
    if (Object.keys(helper.changes(changed).spec).length === 0)
      throw new Error("expected a change");
  });
  console.log(
    `${String(size).padStart(11)} | ${noop.toFixed(1).padStart(26)} | ${rewrite.toFixed(1).padStart(27)} | ${diff.toFixed(1).padStart(29)}`,
  );
}
