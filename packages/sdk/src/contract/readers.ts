import { readPath } from "../conditions/location.js";
import { unstructuredGetConditions } from "../conditions/mirror.js";
import type { ConditionLike } from "../conditions/types.js";
import type { KubeObject } from "../patch/transport.js";
import { parseGoDuration } from "../runtime/duration.js";
import { Annotations } from "./constants.js";

/** Any Kubernetes object as JSON (generated v1beta1 or v1beta2 types fit). */
export interface AnyObject {
  /** `group/version`. */
  apiVersion?: string;
  /** The object's kind, e.g. `MachinePool` or `Cluster`. */
  kind?: string;
  /**
   * The metadata fields the readers look at (the patch layer's object metadata);
   * `deletionTimestamp` as the API sends it or as a Date.
   */
  metadata?: Pick<
    NonNullable<KubeObject["metadata"]>,
    "name" | "namespace" | "uid" | "generation" | "labels" | "annotations"
  > & { deletionTimestamp?: string | Date };
  /** Spec, any shape. */
  spec?: unknown;
  /** Status, any shape. */
  status?: unknown;
}

/** A reference to an infrastructure object, as v1beta2 spells it. */
export interface ContractReference {
  /** API group (v1beta1's apiVersion without the version). */
  apiGroup: string;
  /** Kind of the referenced object, e.g. `FooMachinePool`. */
  kind: string;
  /** Name (same namespace as the MachinePool). */
  name: string;
}

/** The MachinePool as a provider needs it, from either API version (contract appendix B). */
export interface MachinePoolView {
  /** `metadata.name` of the MachinePool. */
  name: string;
  /** `metadata.namespace` of the MachinePool (the InfraMachinePool lives in the same one). */
  namespace: string;
  /** `metadata.uid`; undefined on an object not read from the API server. */
  uid: string | undefined;
  /** `spec.clusterName`. */
  clusterName: string | undefined;
  /** Desired replicas (`spec.replicas`; the webhook always sets it). */
  replicas: number | undefined;
  /** Kubernetes version of the instances (`spec.template.spec.version`). */
  version: string | undefined;
  /** Bootstrap data secret name; undefined until bootstrap data is ready. */
  bootstrapDataSecretName: string | undefined;
  /** Failure domains the pool may spread over (`spec.failureDomains`); empty: no restriction. */
  failureDomains: string[];
  /** `spec.template.spec.minReadySeconds` (v1beta1: `spec.minReadySeconds`). */
  minReadySeconds: number | undefined;
  /** Drain timeout in seconds (v1beta1: `nodeDrainTimeout` duration). */
  nodeDrainTimeoutSeconds: number | undefined;
  /** Infrastructure reference (v1beta1 ObjectReference converted). */
  infrastructureRef: ContractReference | undefined;
  /** `spec.providerIDList` as core last copied it. */
  providerIDList: string[];
  /** `status.initialization.infrastructureProvisioned` (v1beta1: `status.infrastructureReady`). */
  infrastructureProvisioned: boolean;
  /** `status.initialization.bootstrapDataSecretCreated` (v1beta1: `status.bootstrapReady`). */
  bootstrapDataSecretCreated: boolean;
  /** v1beta2 conditions (v1beta1: `status.v1beta2.conditions`). */
  conditions: ConditionLike[];
  /** Node-derived ready replicas (v1beta2: `status.deprecated.v1beta1.readyReplicas`; v1beta1: `status.readyReplicas`). */
  nodeReadyReplicas: number | undefined;
  /** Replicas are managed by an external autoscaler (`cluster.x-k8s.io/replicas-managed-by`, R16). */
  replicasManagedByExternalAutoscaler: boolean;
  /** The object is being deleted. */
  deleting: boolean;
}

const str = (v: unknown) => (typeof v === "string" ? v : undefined);
const num = (v: unknown) => (typeof v === "number" ? v : undefined);

function groupOf(apiVersion: string | undefined): string {
  if (!apiVersion) return "";
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/**
 * `replicasManagedByExternalAutoscaler` (CAPI `annotations.ReplicasManagedByExternalAutoscaler`): true when
 * the MachinePool has `cluster.x-k8s.io/replicas-managed-by` with any value except exactly `"false"`. The
 * provider must then write the observed count into `MachinePool.spec.replicas` (R16).
 *
 * @example
 * ```ts
 * replicasManagedByExternalAutoscaler({ metadata: { annotations: { "cluster.x-k8s.io/replicas-managed-by": "" } } }); // true
 * ```
 */
export function replicasManagedByExternalAutoscaler(obj: AnyObject): boolean {
  const annotations = obj.metadata?.annotations;
  if (!annotations || !Object.hasOwn(annotations, Annotations.ReplicasManagedBy)) return false;
  return annotations[Annotations.ReplicasManagedBy] !== "false";
}

/**
 * Reads a MachinePool of either API version into one shape (contract appendix B).
 *
 * @example
 * ```ts
 * const mp = readMachinePool(machinePool);
 * if (!mp.bootstrapDataSecretName) return waitForBootstrapData();
 * ```
 */
export function readMachinePool(obj: AnyObject): MachinePoolView {
  const v1beta1 = obj.apiVersion?.endsWith("/v1beta1") === true;
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const templateSpec = readPath(spec, ["template", "spec"]) as Record<string, unknown> | undefined;
  let infrastructureRef: ContractReference | undefined;
  const ref = templateSpec?.infrastructureRef as Record<string, unknown> | undefined;
  if (ref && typeof ref.kind === "string" && typeof ref.name === "string") {
    infrastructureRef = {
      apiGroup: typeof ref.apiGroup === "string" ? ref.apiGroup : groupOf(str(ref.apiVersion)),
      kind: ref.kind,
      name: ref.name,
    };
  }
  const drain = v1beta1
    ? str(templateSpec?.nodeDrainTimeout)
    : num(readPath(templateSpec, ["deletion", "nodeDrainTimeoutSeconds"]));
  return {
    name: obj.metadata?.name ?? "",
    namespace: obj.metadata?.namespace ?? "",
    uid: obj.metadata?.uid,
    clusterName: str(spec.clusterName),
    replicas: num(spec.replicas),
    version: str(templateSpec?.version),
    bootstrapDataSecretName: str(readPath(templateSpec, ["bootstrap", "dataSecretName"])),
    failureDomains: Array.isArray(spec.failureDomains) ? (spec.failureDomains as string[]) : [],
    minReadySeconds: num(v1beta1 ? spec.minReadySeconds : templateSpec?.minReadySeconds),
    nodeDrainTimeoutSeconds: typeof drain === "string" ? parseGoDuration(drain) / 1000 : drain,
    infrastructureRef,
    providerIDList: Array.isArray(spec.providerIDList) ? (spec.providerIDList as string[]) : [],
    infrastructureProvisioned:
      (v1beta1
        ? readPath(obj, ["status", "infrastructureReady"])
        : readPath(obj, ["status", "initialization", "infrastructureProvisioned"])) === true,
    bootstrapDataSecretCreated:
      (v1beta1
        ? readPath(obj, ["status", "bootstrapReady"])
        : readPath(obj, ["status", "initialization", "bootstrapDataSecretCreated"])) === true,
    conditions: v1beta1
      ? unstructuredGetConditions({
          status: { v1beta2: readPath(obj, ["status", "v1beta2"]) ?? { conditions: [] } },
        })
      : unstructuredGetConditions({
          status: { conditions: readPath(obj, ["status", "conditions"]) },
        }),
    nodeReadyReplicas: num(
      v1beta1
        ? readPath(obj, ["status", "readyReplicas"])
        : readPath(obj, ["status", "deprecated", "v1beta1", "readyReplicas"]),
    ),
    replicasManagedByExternalAutoscaler: replicasManagedByExternalAutoscaler(obj),
    deleting:
      obj.metadata?.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null,
  };
}

/** The Cluster as a provider needs it, from either API version. */
export interface ClusterView {
  /** `metadata.name` of the Cluster, the value of the `cluster.x-k8s.io/cluster-name` label. */
  name: string;
  /** `metadata.namespace` of the Cluster. */
  namespace: string;
  /** `spec.paused`. */
  paused: boolean;
  /** `status.initialization.infrastructureProvisioned` (v1beta1: `status.infrastructureReady`). */
  infrastructureProvisioned: boolean;
  /**
   * `status.initialization.controlPlaneInitialized` (v1beta1: the `ControlPlaneInitialized` condition in
   * `status.v1beta2.conditions` or `status.conditions`, else `status.controlPlaneReady`).
   */
  controlPlaneInitialized: boolean;
  /** v1beta2 conditions (v1beta1: `status.v1beta2.conditions`). */
  conditions: ConditionLike[];
  /** The infrastructure cluster reference. */
  infrastructureRef: ContractReference | undefined;
  /** The object is being deleted. */
  deleting: boolean;
}

/**
 * Reads a Cluster of either API version into one shape.
 *
 * @example
 * ```ts
 * if (!readCluster(cluster).infrastructureProvisioned) return waitForClusterInfrastructure();
 * ```
 */
export function readCluster(obj: AnyObject): ClusterView {
  const v1beta1 = obj.apiVersion?.endsWith("/v1beta1") === true;
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const ref = spec.infrastructureRef as Record<string, unknown> | undefined;
  const conditions = v1beta1
    ? unstructuredGetConditions({
        status: { v1beta2: readPath(obj, ["status", "v1beta2"]) ?? { conditions: [] } },
      })
    : unstructuredGetConditions({
        status: { conditions: readPath(obj, ["status", "conditions"]) },
      });
  let controlPlaneInitialized: boolean;
  if (v1beta1) {
    const fromV1beta2 = conditions.find((c) => c.type === "ControlPlaneInitialized");
    const rawV1beta1 = readPath(obj, ["status", "conditions"]);
    const fromV1beta1 = Array.isArray(rawV1beta1)
      ? (rawV1beta1 as ConditionLike[]).find((c) => c?.type === "ControlPlaneInitialized")
      : undefined;
    controlPlaneInitialized =
      (fromV1beta2 ?? fromV1beta1)?.status === "True" ||
      readPath(obj, ["status", "controlPlaneReady"]) === true;
  } else {
    controlPlaneInitialized =
      readPath(obj, ["status", "initialization", "controlPlaneInitialized"]) === true;
  }
  return {
    name: obj.metadata?.name ?? "",
    namespace: obj.metadata?.namespace ?? "",
    paused: spec.paused === true,
    infrastructureProvisioned:
      (v1beta1
        ? readPath(obj, ["status", "infrastructureReady"])
        : readPath(obj, ["status", "initialization", "infrastructureProvisioned"])) === true,
    controlPlaneInitialized,
    conditions,
    infrastructureRef:
      ref && typeof ref.kind === "string" && typeof ref.name === "string"
        ? {
            apiGroup:
              typeof ref.apiGroup === "string" ? ref.apiGroup : groupOf(str(ref.apiVersion)),
            kind: ref.kind,
            name: ref.name,
          }
        : undefined,
    deleting:
      obj.metadata?.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null,
  };
}
