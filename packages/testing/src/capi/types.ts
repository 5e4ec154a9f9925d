import { clusterv1beta2 } from "@capi-ts/sdk/api";
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1ObjectMeta, V1Pod } from "@kubernetes/client-node";

/** A reference as v1beta2 spells it (`ContractVersionedObjectReference`). */
export interface VersionedRef {
  /**
   * API group without a version, e.g. `infrastructure.cluster.x-k8s.io`; the served version comes
   * from the CRD's contract label.
   */
  apiGroup: string;
  /** Kind of the referenced object, e.g. `DockerMachinePool`. */
  kind: string;
  /** Name, in the MachinePool's namespace. */
  name: string;
}

/** Pods, which the Machine controller drains and the drain scenarios place on Nodes. */
export const PodResource: ResourceDescriptor<V1Pod> = {
  group: "",
  version: "v1",
  kind: "Pod",
  plural: "pods",
  scope: "Namespaced",
  subresources: { status: true },
};

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

/** A `cluster.x-k8s.io/v1beta2` MachinePool (generated type). */
export type MachinePoolObject = clusterv1beta2.MachinePool;

/** A `cluster.x-k8s.io/v1beta2` Machine (generated type). */
export type MachineObject = clusterv1beta2.Machine;

/** A `cluster.x-k8s.io/v1beta2` Cluster (generated type). */
export type ClusterObject = clusterv1beta2.Cluster;

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

export const MachinePoolResource: ResourceDescriptor<MachinePoolObject> =
  clusterv1beta2.MachinePoolResource;

export const MachineResource: ResourceDescriptor<MachineObject> = clusterv1beta2.MachineResource;

export const ClusterResource: ResourceDescriptor<ClusterObject> = clusterv1beta2.ClusterResource;

export const CrdResource: ResourceDescriptor<CrdObject> = {
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  scope: "Cluster",
  subresources: { status: true },
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
