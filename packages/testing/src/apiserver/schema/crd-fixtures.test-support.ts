import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseAllDocuments } from "yaml";

/** The shared reference folder (CRDs), from `CAPI_TS_SHARED` or next to the repository. */
export function sharedDir(): string {
  return process.env.CAPI_TS_SHARED ?? resolve(import.meta.dirname, "../../../../../../shared");
}

interface CrdVersion {
  name: string;
  schema: { openAPIV3Schema: unknown };
}

/** The `openAPIV3Schema` of one version of a CRD file under `crds/`. */
export function crdSchema(file: string, version: string): unknown {
  const text = readFileSync(resolve(sharedDir(), "crds", file), "utf8");
  for (const doc of parseAllDocuments(text)) {
    const crd = doc.toJS() as { spec: { versions: CrdVersion[] } };
    const found = crd.spec.versions.find((v) => v.name === version);
    if (found !== undefined) return found.schema.openAPIV3Schema;
  }
  throw new Error(`no version ${version} in ${file}`);
}
