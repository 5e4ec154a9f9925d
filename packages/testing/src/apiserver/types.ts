import type { OwnerReference } from "@capi-ts/sdk/contract";
import type { KubeObject as SdkKubeObject } from "@capi-ts/sdk/patch";
import type { InvalidCause } from "./errors.js";

/** The object metadata fields the server reads and maintains. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
  [key: string]: unknown;
}

/** The SDK's {@link SdkKubeObject} as the server holds it: `apiVersion`, `kind` and `metadata` always set. */
export interface KubeObject extends SdkKubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/**
 * The hooks that make a resource behave like its real counterpart. The core calls them in this
 * order on every write: `fromView` (request version → storage form), `prune`, `applyDefaults`,
 * the core's own metadata checks, `validate`. `validate` returns k8s-style causes.
 */
export interface ValidationStrategy {
  prune?(obj: Record<string, unknown>): void;
  applyDefaults?(obj: Record<string, unknown>): void;
  validate?(obj: KubeObject, old: KubeObject | undefined): InvalidCause[];
  /** The structural schema handle, passed to server-side apply for list-map keys. */
  schema?: unknown;
}

/** One served version of a resource. */
export interface ServedVersion {
  version: string;
  /** Per-version validation (a CRD version's schema); the resource's strategy applies otherwise. */
  strategy?: ValidationStrategy;
  /** Storage form → this version's form. Absent: only `apiVersion` changes. */
  toView?(obj: KubeObject): KubeObject;
  /** This version's form → storage form. Absent: only `apiVersion` changes. */
  fromView?(obj: KubeObject): KubeObject;
}

/** How `metadata.generation` moves. */
export type GenerationPolicy =
  /** never set (ConfigMap, Secret, …) */
  | "none"
  /** bumps when `spec` changes (CustomResourceDefinition) */
  | "spec"
  /** bumps when anything but metadata (and status, when it is a subresource) changes (custom resources) */
  | "allButMetadataAndStatus";

/** A resource type served by the server; several versions may share one storage. */
export interface ResourceType {
  group: string;
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  versions: ServedVersion[];
  /** apiVersion of the stored form. */
  storageApiVersion: string;
  /** Shared storage key: two resource types (core and events.k8s.io Events) may share it. */
  storageKey: string;
  statusSubresource: boolean;
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /** Built-in kinds accept strategic merge patch; custom resources answer 415. */
  builtin: boolean;
  generation: GenerationPolicy;
  fieldSelectors: string[];
  /** Whether an immediate delete answers with the deleted object (pods) rather than a Success `Status`. */
  returnDeletedObject: boolean;
  /** Whether PUT without `metadata.resourceVersion` is accepted. */
  allowUnconditionalUpdate: boolean;
  strategy?: ValidationStrategy;
  /** Kind-specific update checks (immutable fields), as `FieldValue*` causes. */
  validateUpdate?(obj: KubeObject, old: KubeObject): InvalidCause[];
  /** Kind-specific normalisation on every write (a Secret's `stringData` folded into `data`). */
  prepareForWrite?(obj: KubeObject): void;
  /** Kind-specific preparation on create (defaults the server sets, such as a namespace's phase). */
  prepareForCreate?(obj: KubeObject): void;
  /** Finalizers the server itself adds when the object is deleted (CRDs: the cleanup finalizer). */
  finalizersOnDelete?: string[];
  /** The CRD that defines this resource. */
  crdName?: string;
}
