import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseAllDocuments } from "yaml";

/** The shared reference folder (CRDs), from `CAPI_TS_SHARED` or next to the repository. */
export function sharedDir(): string {
  return process.env.CAPI_TS_SHARED ?? resolve(import.meta.dirname, "../../../../../../shared");
}

/** A CRD version as the fixtures use it. */
export interface CrdVersion {
  name: string;
  schema: { openAPIV3Schema: unknown };
  subresources?: { status?: unknown; scale?: unknown };
}

/** One version of a CRD file under `crds/`. */
export function crdVersion(file: string, version: string): CrdVersion {
  const text = readFileSync(resolve(sharedDir(), "crds", file), "utf8");
  for (const doc of parseAllDocuments(text)) {
    const crd = doc.toJS() as { spec: { versions: CrdVersion[] } };
    const found = crd.spec.versions.find((v) => v.name === version);
    if (found !== undefined) return found;
  }
  throw new Error(`no version ${version} in ${file}`);
}

/** The `openAPIV3Schema` of one version of a CRD file under `crds/`. */
export function crdSchema(file: string, version: string): unknown {
  return crdVersion(file, version).schema.openAPIV3Schema;
}
