/**
 * The sample pool (config/samples/) and the cluster template (templates/cluster-template.yaml), written
 * from the kind and one example spec, so that they cannot drift from the schema: `npm run samples`
 * rewrites both, and test/samples.test.ts fails when a file differs from what this renders or when the
 * example no longer passes the kind's schema and validation.
 */
import { writeFile } from "node:fs/promises";
import type { Manifest } from "@capi-ts/sdk";
import { componentsYAML } from "@capi-ts/sdk/manifests";
import { FooMachinePool, type FooMachinePoolSpec, FooMachinePoolSpecSchema } from "./kind.js";

/** The example spec both files show. TODO: keep it a pool a user would start from. */
export const sampleSpec: FooMachinePoolSpec = { instanceType: "small", minSize: 0, maxSize: 10 };

/** Where each rendered file goes, relative to the project. */
export const SAMPLE_FILE = `config/samples/${FooMachinePool.kind.toLowerCase()}.yaml`;
/** The cluster template clusterctl generate reads. */
export const CLUSTER_TEMPLATE_FILE = "templates/cluster-template.yaml";

/** config/samples/<kind>.yaml: one pool to `kubectl apply`. */
export function sampleYAML(): string {
  const spec = FooMachinePoolSpecSchema.parse(sampleSpec);
  const pool: Manifest = {
    apiVersion: FooMachinePool.apiVersion,
    kind: FooMachinePool.kind,
    metadata: { name: "sample-pool", namespace: "default" },
    spec,
  };
  return componentsYAML([pool]).replace(/^---\n/, "");
}

// js-yaml quotes `${…}`; clusterctl needs it bare so that `replicas: ${N:=3}` becomes a number.
const unquoteVariables = (yaml: string) =>
  yaml.replace(/'(\$\{[A-Za-z_][A-Za-z0-9_]*(?::?[=-][^}']*)?\})'/g, "$1");

/** templates/cluster-template.yaml: a Cluster with one pool of this kind, in clusterctl variables. */
export function clusterTemplateYAML(): string {
  const name = "${CLUSTER_NAME}-pool-0";
  const metadata = { name, namespace: "${NAMESPACE}" };
  const objects: Manifest[] = [
    {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: "${CLUSTER_NAME}", namespace: "${NAMESPACE}" },
      spec: { clusterNetwork: { pods: { cidrBlocks: ["192.168.0.0/16"] } } },
    },
    {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata,
      spec: {
        clusterName: "${CLUSTER_NAME}",
        replicas: "${WORKER_MACHINE_COUNT:=3}",
        template: {
          spec: {
            clusterName: "${CLUSTER_NAME}",
            version: "${KUBERNETES_VERSION}",
            bootstrap: {
              configRef: { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig", name },
            },
            infrastructureRef: {
              apiGroup: FooMachinePool.group,
              kind: FooMachinePool.kind,
              name,
            },
          },
        },
      },
    },
    {
      apiVersion: FooMachinePool.apiVersion,
      kind: FooMachinePool.kind,
      metadata,
      spec: {
        ...FooMachinePoolSpecSchema.parse(sampleSpec),
        instanceType: `\${FOO_INSTANCE_TYPE:=${sampleSpec.instanceType}}`,
      },
    },
    {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata,
      spec: {
        joinConfiguration: {
          nodeRegistration: {
            kubeletExtraArgs: [{ name: "cloud-provider", value: "external" }],
          },
        },
      },
    },
  ];
  return `# A workload cluster's worker pool on foo (written by \`npm run samples\` from src/samples.ts).
# Variables (clusterctl generate cluster): CLUSTER_NAME, NAMESPACE, KUBERNETES_VERSION,
# WORKER_MACHINE_COUNT, FOO_INSTANCE_TYPE.
# TODO (in src/samples.ts): add your control plane (e.g. a KubeadmControlPlane and its infrastructure
# template) and the Cluster's infrastructureRef for your cloud.
${unquoteVariables(componentsYAML(objects).replace(/^---\n/, ""))}`;
}

async function main(): Promise<void> {
  await writeFile(SAMPLE_FILE, sampleYAML());
  await writeFile(CLUSTER_TEMPLATE_FILE, clusterTemplateYAML());
  console.log(`wrote ${SAMPLE_FILE} and ${CLUSTER_TEMPLATE_FILE}`);
}

if (process.argv[1]?.endsWith("samples.js")) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
