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
  CLUSTER_CLASS_FILE,
  CLUSTER_TEMPLATE_CLUSTERCLASS_FILE,
  CLUSTER_TEMPLATE_FILE,
  clusterClassYAML,
  clusterTemplateClusterClassYAML,
  clusterTemplateYAML,
  SAMPLE_FILE,
  sampleYAML,
} from "../src/samples.js";

const STALE = "is stale: run `npm run samples` (it writes the files from src/samples.ts)";

describe("samples", () => {
  it.each([
    [SAMPLE_FILE, sampleYAML],
    [CLUSTER_TEMPLATE_FILE, clusterTemplateYAML],
    [CLUSTER_CLASS_FILE, clusterClassYAML],
    [CLUSTER_TEMPLATE_CLUSTERCLASS_FILE, clusterTemplateClusterClassYAML],
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

  it("holds a ClusterClass whose worker pool class names a template of the kind the kind accepts", () => {
    const values = {
      CLUSTER_NAME: "demo",
      NAMESPACE: "default",
      KUBERNETES_VERSION: "v1.35.0",
    };
    const objects = [
      ...loadAll(substituteClusterctlVariables(clusterClassYAML(), values)),
      ...loadAll(substituteClusterctlVariables(clusterTemplateClusterClassYAML(), values)),
    ] as Array<{ kind: string; metadata: { name: string }; spec: unknown }>;
    const template = objects.find((o) => o.kind === `${FooMachinePool.kind}Template`);
    if (!template) throw new Error(`no ${FooMachinePool.kind}Template in ${CLUSTER_CLASS_FILE}`);
    const pool = (template.spec as { template: { spec: unknown } }).template.spec;
    expect(validateFooMachinePoolSpec(FooMachinePoolSpecSchema.parse(pool))).toEqual([]);
    const clusterClass = objects.find((o) => o.kind === "ClusterClass") as {
      spec: {
        workers: { machinePools: { class: string; infrastructure: { templateRef: unknown } }[] };
      };
    };
    expect(clusterClass.spec.workers.machinePools[0]?.infrastructure.templateRef).toEqual({
      apiVersion: FooMachinePool.apiVersion,
      kind: `${FooMachinePool.kind}Template`,
      name: template.metadata.name,
    });
    const cluster = objects.find((o) => o.kind === "Cluster") as {
      spec: {
        topology: {
          classRef: { name: string };
          workers: { machinePools: { replicas: unknown }[] };
        };
      };
    };
    expect(cluster.spec.topology.classRef.name).toBe(
      objects.find((o) => o.kind === "ClusterClass")?.metadata.name,
    );
    expect(cluster.spec.topology.workers.machinePools[0]?.replicas).toBe(3);
  });
});
