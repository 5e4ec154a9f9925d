/**
 * The version checks of the `crd` scenario, on a CRD object: one storage version, and a webhook
 * conversion whenever the served versions' schemas differ (an object read at a version of another
 * shape would otherwise lose the fields that version lacks, with no annotation to bring them back).
 */

/** A problem of a CRD's versions: the conformance check it fails and why. */
export interface CrdVersionProblem {
  /** `crd.storageVersion` or `crd.conversion`. */
  readonly check: "crd.storageVersion" | "crd.conversion";
  /** What is wrong, naming the CRD and versions. */
  readonly message: string;
}

interface CrdShape {
  metadata?: { name?: string };
  spec?: {
    versions?: Array<{ name?: string; storage?: boolean; schema?: unknown }>;
    conversion?: { strategy?: string };
  };
}

/** The first problem of `crd`'s versions, or `undefined` when they are fine. */
export function crdVersionProblem(crd: unknown): CrdVersionProblem | undefined {
  const { metadata, spec } = (crd ?? {}) as CrdShape;
  const name = metadata?.name ?? "the CRD";
  const versions = spec?.versions ?? [];
  const storage = versions.filter((version) => version.storage === true);
  if (storage.length !== 1) {
    return {
      check: "crd.storageVersion",
      message: `${name} must store exactly one version: ${storage.length} have storage: true`,
    };
  }
  const schemas = new Set(versions.map((version) => JSON.stringify(version.schema ?? null)));
  if (schemas.size > 1 && spec?.conversion?.strategy !== "Webhook") {
    return {
      check: "crd.conversion",
      message: `${name} serves versions of different schemas (${versions.map((v) => v.name).join(", ")}) without conversion.strategy: Webhook; define them with defineInfraMachinePool's spokes`,
    };
  }
  return undefined;
}
