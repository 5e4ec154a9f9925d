/**
 * The sample pool (config/samples/) and the cluster template (templates/cluster-template.yaml), written
 * from the kind and one example spec, so that they cannot drift from the schema: `npm run samples`
 * rewrites both, and test/samples.test.ts fails when a file differs from what this renders or when the
 * example no longer passes the kind's schema and validation.
 */
import { writeFile } from "node:fs/promises";
import type { Manifest } from "@capi-ts/sdk";
import { clusterClassFlavor, componentsYAML } from "@capi-ts/sdk/manifests";
import { FooMachinePool, type FooMachinePoolSpec, FooMachinePoolSpecSchema } from "./kind.js";

/** The example spec both files show. TODO: keep it a pool a user would start from. */
export const sampleSpec: FooMachinePoolSpec = { instanceType: "small", minSize: 0, maxSize: 10 };

/** Where each rendered file goes, relative to the project. */
export const SAMPLE_FILE = `config/samples/${FooMachinePool.kind.toLowerCase()}.yaml`;
/** The cluster template clusterctl generate reads. */
export const CLUSTER_TEMPLATE_FILE = "templates/cluster-template.yaml";

/** The ClusterClass flavor's class: `clusterctl generate cluster --flavor clusterclass` adds its file. */
export const CLUSTER_CLASS_NAME = "foo-default";
/** The ClusterClass and the templates it names. */
export const CLUSTER_CLASS_FILE = `templates/clusterclass-${CLUSTER_CLASS_NAME}.yaml`;
/** A Cluster of that class (the `clusterclass` flavor). */
export const CLUSTER_TEMPLATE_CLUSTERCLASS_FILE = "templates/cluster-template-clusterclass.yaml";

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

/**
 * The ClusterClass flavor, from the kind: its worker MachinePool class stamps out pools from a
 * FooMachinePoolTemplate of the sample spec (the same function renders it for the conformance suite's
 * topology scenarios, which judge the provider under core's topology controller).
 */
function flavor() {
  return clusterClassFlavor({
    kind: FooMachinePool,
    className: CLUSTER_CLASS_NAME,
    poolSpec: {
      ...FooMachinePoolSpecSchema.parse(sampleSpec),
      instanceType: `\${FOO_INSTANCE_TYPE:=${sampleSpec.instanceType}}`,
    },
    templates: {
      // TODO: your cloud's InfraCluster template (the cluster's network, load balancer …).
      infrastructureCluster: {
        apiVersion: `${FooMachinePool.group}/${FooMachinePool.storageVersion}`,
        kind: "FooClusterTemplate",
        metadata: { name: "" },
        spec: { template: { spec: {} } },
      },
      controlPlane: {
        apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
        kind: "KubeadmControlPlaneTemplate",
        metadata: { name: "" },
        spec: { template: { spec: { kubeadmConfigSpec: {} } } },
      },
    },
  });
}

/** templates/clusterclass-<class>.yaml: the ClusterClass and its templates, in clusterctl variables. */
export function clusterClassYAML(): string {
  return `# The ClusterClass ${CLUSTER_CLASS_NAME} and the templates it names (written by \`npm run samples\` from src/samples.ts).
# Variables: NAMESPACE, FOO_INSTANCE_TYPE.
# TODO (in src/samples.ts): name your cloud's InfraCluster template instead of FooClusterTemplate.
${unquoteVariables(componentsYAML(flavor().clusterClass).replace(/^---\n/, ""))}`;
}

/** templates/cluster-template-clusterclass.yaml: a Cluster of that class, its workers one pool of this kind. */
export function clusterTemplateClusterClassYAML(): string {
  return `# A workload cluster of the ClusterClass ${CLUSTER_CLASS_NAME} (written by \`npm run samples\` from src/samples.ts).
# clusterctl generate cluster --flavor clusterclass adds templates/clusterclass-${CLUSTER_CLASS_NAME}.yaml.
# Variables: CLUSTER_NAME, NAMESPACE, KUBERNETES_VERSION, WORKER_MACHINE_COUNT.
${unquoteVariables(componentsYAML([flavor().cluster]).replace(/^---\n/, ""))}`;
}

async function main(): Promise<void> {
  await writeFile(SAMPLE_FILE, sampleYAML());
  await writeFile(CLUSTER_TEMPLATE_FILE, clusterTemplateYAML());
  await writeFile(CLUSTER_CLASS_FILE, clusterClassYAML());
  await writeFile(CLUSTER_TEMPLATE_CLUSTERCLASS_FILE, clusterTemplateClusterClassYAML());
  console.log(
    `wrote ${SAMPLE_FILE}, ${CLUSTER_TEMPLATE_FILE}, ${CLUSTER_CLASS_FILE} and ${CLUSTER_TEMPLATE_CLUSTERCLASS_FILE}`,
  );
}

if (process.argv[1]?.endsWith("samples.js")) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
