import {
  type KubeObject,
  type PatchClient,
  type ResourceRef,
  toTransport,
} from "../patch/transport.js";
import { CLUSTER_API_GROUP, Labels } from "./constants.js";
import type { AnyObject } from "./readers.js";

/** An owner reference as stored in `metadata.ownerReferences`. */
export interface OwnerReference {
  /** `group/version` of the owner. */
  apiVersion: string;
  /** Kind of the owner. */
  kind: string;
  /** Name of the owner. */
  name: string;
  /** UID of the owner. */
  uid: string;
  /** True for the managing controller. */
  controller?: boolean;
  /** Blocks owner deletion until this object is gone. */
  blockOwnerDeletion?: boolean;
}

/** An object whose owner references can be read. */
export interface ObjectWithOwners {
  /** Metadata with owner references. */
  metadata?: { namespace?: string; ownerReferences?: readonly OwnerReference[] };
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/**
 * The owner reference to the MachinePool, matched by API group `cluster.x-k8s.io` and kind `MachinePool`
 * with the version ignored (CAPI `util.GetOwnerMachinePool`, appendix A owner identity).
 *
 * @example
 * ```ts
 * const ref = findOwnerMachinePoolRef(pool);
 * if (!ref) return; // core has not adopted the pool yet; its update event will come
 * ```
 */
export function findOwnerMachinePoolRef(obj: ObjectWithOwners): OwnerReference | undefined {
  return (obj.metadata?.ownerReferences ?? []).find(
    (ref) => ref.kind === "MachinePool" && groupOf(ref.apiVersion) === CLUSTER_API_GROUP,
  );
}

/** Where MachinePools and Clusters are read (default version v1beta2). */
function capiResource(plural: "machinepools" | "clusters", version: string): ResourceRef {
  return { group: CLUSTER_API_GROUP, version, plural };
}

/**
 * Reads the owning MachinePool (at `version`, default `v1beta2`), or `undefined` when the object has no
 * MachinePool owner yet. Read the result with `readMachinePool` to be independent of the version.
 *
 * @example
 * ```ts
 * const mp = await getOwnerMachinePool(kubeConfig, pool);
 * ```
 */
export async function getOwnerMachinePool(
  client: PatchClient,
  obj: ObjectWithOwners,
  options: { version?: string } = {},
): Promise<KubeObject | undefined> {
  const ref = findOwnerMachinePoolRef(obj);
  if (!ref) return undefined;
  return toTransport(client).get(
    capiResource("machinepools", options.version ?? "v1beta2"),
    obj.metadata?.namespace,
    ref.name,
  );
}

/**
 * The Cluster name from the `cluster.x-k8s.io/cluster-name` label, or `undefined`.
 *
 * @example
 * ```ts
 * clusterNameFromMetadata(machinePool); // "my-cluster"
 * ```
 */
export function clusterNameFromMetadata(obj: AnyObject): string | undefined {
  const name = obj.metadata?.labels?.[Labels.ClusterName];
  return name ? name : undefined;
}

/**
 * Reads the Cluster named by the object's `cluster.x-k8s.io/cluster-name` label in its namespace (CAPI
 * `util.GetClusterFromMetadata`). Throws when the label is missing.
 *
 * @example
 * ```ts
 * const cluster = await getClusterFromMetadata(kubeConfig, machinePool);
 * ```
 */
export async function getClusterFromMetadata(
  client: PatchClient,
  obj: AnyObject,
  options: { version?: string } = {},
): Promise<KubeObject> {
  const name = clusterNameFromMetadata(obj);
  if (!name) {
    throw new Error(
      `${obj.kind ?? "object"} ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""} has no ${Labels.ClusterName} label; core sets it on MachinePools — wait for it, or use spec.clusterName`,
    );
  }
  return toTransport(client).get(
    capiResource("clusters", options.version ?? "v1beta2"),
    obj.metadata?.namespace,
    name,
  );
}

/**
 * True when an owner reference list has a controller reference other than to `expected` (matched by
 * group + kind + name). A provider must never set one on its InfraMachinePool: core's
 * `SetControllerReference` then fails (R22).
 *
 * @example
 * ```ts
 * hasForeignController(pool, { group: "cluster.x-k8s.io", kind: "MachinePool", name: mp.metadata.name });
 * ```
 */
export function hasForeignController(
  obj: ObjectWithOwners,
  expected: { group: string; kind: string; name: string },
): boolean {
  return (obj.metadata?.ownerReferences ?? []).some(
    (ref) =>
      ref.controller === true &&
      !(
        groupOf(ref.apiVersion) === expected.group &&
        ref.kind === expected.kind &&
        ref.name === expected.name
      ),
  );
}
