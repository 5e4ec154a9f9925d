// The sample and the cluster template are what src/samples.ts renders from the kind, and the pools in
// them pass the kind's schema and validation, once clusterctl's variables are substituted.
import { readFile } from "node:fs/promises";
import { substituteClusterctlVariables } from "@capi-ts/sdk/manifests";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import {
  FooMachinePool,
  FooMachinePoolSpecSchema,
  validateFooMachinePoolSpec,
} from "../src/kind.js";
import {
  CLUSTER_TEMPLATE_FILE,
  clusterTemplateYAML,
  SAMPLE_FILE,
  sampleYAML,
} from "../src/samples.js";

const STALE = "is stale: run `npm run samples` (it writes the files from src/samples.ts)";

describe("samples", () => {
  it.each([
    [SAMPLE_FILE, sampleYAML],
    [CLUSTER_TEMPLATE_FILE, clusterTemplateYAML],
  ])("%s is what src/samples.ts renders", async (file, render) => {
    const onDisk = await readFile(file, "utf8");
    expect(onDisk === render(), `${file} ${STALE}`).toBe(true);
  });

  it("holds pools the kind accepts, with clusterctl's variables substituted", () => {
    const template = substituteClusterctlVariables(clusterTemplateYAML(), {
      CLUSTER_NAME: "demo",
      NAMESPACE: "default",
      KUBERNETES_VERSION: "v1.35.0",
    });
    const objects = [...loadAll(sampleYAML()), ...loadAll(template)] as Array<{
      kind: string;
      spec: unknown;
    }>;
    const pools = objects.filter((o) => o.kind === FooMachinePool.kind);
    expect(pools).toHaveLength(2);
    for (const pool of pools) {
      const spec = FooMachinePoolSpecSchema.parse(pool.spec);
      expect(validateFooMachinePoolSpec(spec)).toEqual([]);
    }
    const machinePool = objects.find((o) => o.kind === "MachinePool") as {
      spec: { replicas: unknown };
    };
    expect(machinePool.spec.replicas).toBe(3);
  });
});
