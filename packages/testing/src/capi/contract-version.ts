import { CLUSTER_API_GROUP, calculateCRDName } from "@capi-ts/sdk/contract";
import type { InformerCache, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import { CrdResource, type ExternalObject, type VersionedRef } from "./types.js";

/** The contract versions core v1beta2 accepts, newest first (`GetCompatibleVersions("v1beta2")`). */
const COMPATIBLE_CONTRACTS = ["v1beta2", "v1beta1"] as const;

/** How core addresses a referenced kind: the contract it implements and the apiVersion it reads. */
export interface ResolvedKind {
  contractVersion: "v1beta2" | "v1beta1";
  resource: ResourceDescriptor<ExternalObject>;
}

/** An error core returns while resolving a reference's CRD (not a NotFound of the object itself). */
export class ContractResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContractResolutionError";
  }
}

interface KubeVersion {
  text: string;
  major: number;
  stage: number; // 2 GA, 1 beta, 0 alpha
  minor: number;
}

function parseKubeVersion(text: string): KubeVersion | undefined {
  const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(text);
  if (!match) return undefined;
  const stage = match[2] === undefined ? 2 : match[2] === "beta" ? 1 : 0;
  return { text, major: Number(match[1]), stage, minor: Number(match[3] ?? 0) };
}

/**
 * `k8s.io/apimachinery/pkg/version.CompareKubeAwareVersionStrings`: GA > beta > alpha, then major,
 * then minor (v2 > v1 > v11beta2 > v10beta3 > v12alpha1); kube-like strings sort above anything else, which sorts lexically.
 */
export function compareKubeAwareVersions(a: string, b: string): number {
  const va = parseKubeVersion(a);
  const vb = parseKubeVersion(b);
  if (va && vb) {
    if (va.stage !== vb.stage) return va.stage - vb.stage;
    if (va.major !== vb.major) return va.major - vb.major;
    return va.minor - vb.minor;
  }
  if (va) return 1;
  if (vb) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Resolves a referenced GroupKind the way core does (`contract.GetGKMetadata` +
 * `GetLatestContractAndAPIVersionFromContract`): read the CRD named `CalculateCRDName(group, kind)`,
 * take the newest compatible contract label `cluster.x-k8s.io/<contract>` and the highest version it
 * lists. CRDs are read from a shared informer, as core reads them from its cache.
 */
export class ContractResolver {
  private readonly cache: InformerCache;

  constructor(cache: InformerCache) {
    this.cache = cache;
  }

  async resolve(ref: Pick<VersionedRef, "apiGroup" | "kind">): Promise<ResolvedKind> {
    const crdName = calculateCRDName(ref.apiGroup, ref.kind);
    const crd = await this.cache.get(CrdResource, { name: crdName });
    if (!crd) {
      throw new ContractResolutionError(
        `failed to get object from ref: failed to get CustomResourceDefinition metadata: customresourcedefinitions.apiextensions.k8s.io "${crdName}" not found (core looks the CRD up by the name CalculateCRDName(group, kind); contract R5)`,
      );
    }
    const labels = crd.metadata?.labels ?? {};
    for (const contractVersion of COMPATIBLE_CONTRACTS) {
      const supported = labels[`${CLUSTER_API_GROUP}/${contractVersion}`];
      if (!supported) continue;
      const versions = supported.split("_").sort(compareKubeAwareVersions);
      const version = versions[versions.length - 1] as string;
      const served = crd.spec?.versions?.find((v) => v.name === version);
      return {
        contractVersion,
        resource: {
          group: ref.apiGroup,
          version,
          kind: ref.kind,
          plural: crd.spec?.names?.plural ?? crdName.slice(0, crdName.indexOf(".")),
          scope: crd.spec?.scope === "Cluster" ? "Cluster" : "Namespaced",
          subresources: { status: served?.subresources?.status !== undefined },
        },
      };
    }
    throw new ContractResolutionError(
      `failed to get object from ref: cannot find any versions matching contract versions ["v1beta2" "v1beta1"] for CRD ${crdName} as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels); label the CRD e.g. ${CLUSTER_API_GROUP}/v1beta2: v1beta2 (contract R4)`,
    );
  }
}
