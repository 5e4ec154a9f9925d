import type { ResourceDescriptor } from "@capi-ts/sdk";
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";

/** A reference as v1beta2 spells it (`ContractVersionedObjectReference`). */
export interface VersionedRef {
  /** API group. */
  apiGroup: string;
  /** Kind. */
  kind: string;
  /** Name, in the MachinePool's namespace. */
  name: string;
}

/** Object metadata (timestamps arrive as strings on the wire despite the client's `Date` typing). */
export type ObjectMetadata = V1ObjectMeta;

/** A deprecated v1beta1 condition as core writes it on a v1beta2 MachinePool. */
export interface DeprecatedCondition {
  type: string;
  status: string;
  severity?: string;
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

/** The part of a `cluster.x-k8s.io/v1beta2` MachinePool that core's controller touches. */
export interface MachinePoolObject extends KubernetesObject {
  spec?: {
    clusterName?: string;
    replicas?: number;
    providerIDList?: string[];
    failureDomains?: string[];
    template?: {
      spec?: {
        clusterName?: string;
        version?: string;
        bootstrap?: { configRef?: Partial<VersionedRef>; dataSecretName?: string };
        infrastructureRef?: Partial<VersionedRef>;
        minReadySeconds?: number;
        deletion?: { nodeDeletionTimeoutSeconds?: number; [key: string]: unknown };
        [key: string]: unknown;
      };
      [key: string]: unknown;
    };
    [key: string]: unknown;
  };
  status?: {
    phase?: string;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    upToDateReplicas?: number;
    observedGeneration?: number;
    nodeRefs?: { apiVersion?: string; kind?: string; name?: string; uid?: string }[];
    versions?: { version: string; replicas?: number }[];
    initialization?: { infrastructureProvisioned?: boolean; bootstrapDataSecretCreated?: boolean };
    conditions?: { type: string; status: string; [key: string]: unknown }[];
    deprecated?: {
      v1beta1?: {
        readyReplicas?: number;
        availableReplicas?: number;
        unavailableReplicas?: number;
        failureReason?: string;
        failureMessage?: string;
        conditions?: DeprecatedCondition[];
      };
    };
    [key: string]: unknown;
  };
}

/** A `cluster.x-k8s.io/v1beta2` Cluster, as far as core's MachinePool controller reads it. */
export interface ClusterObject extends KubernetesObject {
  spec?: { paused?: boolean; [key: string]: unknown };
  status?: Record<string, unknown>;
}

/** Any object referenced by a MachinePool (InfraMachinePool, bootstrap config), read unstructured. */
export interface ExternalObject extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** The metadata of a CustomResourceDefinition the emulator reads (core reads it as PartialObjectMetadata). */
export interface CrdObject extends KubernetesObject {
  spec?: {
    group?: string;
    names?: { kind?: string; plural?: string };
    scope?: string;
    versions?: { name: string; served?: boolean; subresources?: { status?: object } }[];
  };
}

export const MachinePoolResource: ResourceDescriptor<MachinePoolObject> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "MachinePool",
  plural: "machinepools",
  namespaced: true,
  hasStatus: true,
};

export const ClusterResource: ResourceDescriptor<ClusterObject> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "Cluster",
  plural: "clusters",
  namespaced: true,
  hasStatus: true,
};

export const CrdResource: ResourceDescriptor<CrdObject> = {
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  namespaced: false,
  hasStatus: true,
};

/** `group/kind` key of a reference. */
export function groupKindOf(ref: { apiGroup: string; kind: string }): string {
  return `${ref.kind}.${ref.apiGroup}`;
}

/** True for a reference with a kind and a name (Go `ContractVersionedObjectReference.IsDefined`). */
export function isDefinedRef(ref: Partial<VersionedRef> | undefined): ref is VersionedRef {
  return ref !== undefined && !!ref.kind && !!ref.name && typeof ref.apiGroup === "string";
}

/** `namespace/name` for messages. */
export function describeKey(obj: { metadata?: ObjectMetadata } | undefined): string {
  return `${obj?.metadata?.namespace ?? ""}/${obj?.metadata?.name ?? ""}`;
}

export function isDeleting(obj: { metadata?: ObjectMetadata } | undefined): boolean {
  const ts: unknown = obj?.metadata?.deletionTimestamp;
  return ts !== undefined && ts !== null && ts !== "";
}

export function jsonCopy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
