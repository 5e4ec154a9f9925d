import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { loadAll } from "js-yaml";
import { capiCrdsFolder } from "../../crds.js";

/**
 * The CRD folders the fixtures read, both in the repository and both taken by `./dev crds` from Go
 * modules: `capi` is the target CAPI release this package ships, `aws` the reference set of AWS's
 * provider at a pinned release (not shipped).
 */
export const crdFolders = {
  capi: capiCrdsFolder,
  aws: resolve(import.meta.dirname, "../../../../../reference/aws/crds"),
} as const;

/** A file of one of {@link crdFolders}, as `capi/<file>` or `aws/<file>`. */
export function crdPath(file: string): string {
  const [folder, ...rest] = file.split("/");
  const dir = crdFolders[folder as keyof typeof crdFolders];
  if (dir === undefined || rest.length !== 1)
    throw new Error(`${file}: name a CRD as capi/<file> or aws/<file>`);
  return resolve(dir, rest[0] as string);
}

/** A CRD version as the fixtures use it. */
export interface CrdVersion {
  name: string;
  schema: { openAPIV3Schema: unknown };
  subresources?: { status?: unknown; scale?: unknown };
}

/** One version of a CRD file under `crds/`. */
export function crdVersion(file: string, version: string): CrdVersion {
  const text = readFileSync(crdPath(file), "utf8");
  for (const doc of loadAll(text)) {
    const crd = doc as { spec: { versions: CrdVersion[] } };
    const found = crd.spec.versions.find((v) => v.name === version);
    if (found !== undefined) return found;
  }
  throw new Error(`no version ${version} in ${file}`);
}

/** The `openAPIV3Schema` of one version of a CRD file under `crds/`. */
export function crdSchema(file: string, version: string): unknown {
  return crdVersion(file, version).schema.openAPIV3Schema;
}

/**
 * A valid CAPI v1beta2 MachinePool without status (three replicas, two failure domains, a readiness
 * gate), shared by the schema tests, the golden scenarios and the engines benchmark; each changes
 * its copy.
 */
export function capiMachinePool(name = "mp-0"): Record<string, unknown> {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: {
      name,
      namespace: "default",
      labels: { "cluster.x-k8s.io/cluster-name": "c1" },
    },
    spec: {
      clusterName: "c1",
      replicas: 3,
      failureDomains: ["us-east-1a", "us-east-1b"],
      providerIDList: ["aws:///us-east-1a/i-1", "aws:///us-east-1b/i-2"],
      template: {
        metadata: { labels: { pool: "a" } },
        spec: {
          clusterName: "c1",
          version: "v1.33.0",
          bootstrap: {
            configRef: {
              apiGroup: "bootstrap.cluster.x-k8s.io",
              kind: "KubeadmConfig",
              name: "mp-0",
            },
          },
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "AWSMachinePool",
            name: "mp-0",
          },
          readinessGates: [{ conditionType: "example.com/Ready", polarity: "Positive" }],
        },
      },
    },
  };
}
