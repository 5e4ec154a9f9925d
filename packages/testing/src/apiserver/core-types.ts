/**
 * What the core's verbs take and return, and the engines and hooks plugged into it.
 *
 * @module
 */
import type { ApiError } from "./errors.js";
import type { ResolvedResource } from "./registry.js";
import type { FieldRequirement, LabelRequirement } from "./selectors.js";
import type { KubeObject } from "./types.js";

/** Arguments shared by the field-management engines. */
export interface FieldManagementArgs {
  manager: string;
  now: string;
  subresource?: string;
  /** The merge schema of the kind (a compiled CRD schema root or a built-in kind's). */
  schema?: unknown;
  apiVersion?: string;
  /** Top-level fields the endpoint resets, which are therefore never owned. */
  ignoredFields?: string[][];
}

/** The patch and apply engines the core delegates to (wired in engines.ts). */
export interface PatchEngines {
  /** RFC 6902; throws an {@link ApiError} for a bad patch. */
  jsonPatch?(obj: unknown, ops: unknown): unknown;
  /** Strategic merge patch of a built-in kind; throws an {@link ApiError}. */
  strategicMergePatch?(kindKey: string, obj: unknown, patch: unknown): unknown;
  /** Server-side apply. */
  serverSideApply?(
    args: FieldManagementArgs & {
      live: KubeObject | undefined;
      applied: KubeObject;
      force: boolean;
    },
  ):
    | { object: KubeObject; changed: boolean }
    | { conflicts: { manager: string; field: string; message: string }[]; message: string };
  /** Records a non-apply write in `managedFields` (operation Update). */
  trackUpdate?(
    args: FieldManagementArgs & { live: KubeObject | undefined; updated: KubeObject },
  ): KubeObject;
  /** The merge schema of a built-in kind. */
  builtinSchema?(kind: string): unknown;
}

/** Options shared by writes. */
export interface WriteOptions {
  dryRun?: boolean;
  fieldManager?: string;
  subresource?: string;
  /** The client's User-Agent: the server names unnamed field managers after it. */
  userAgent?: string;
}

/** `DeleteOptions`, from the body or the query. */
export interface DeleteOptions {
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

/** List parameters. */
export interface ListOptions {
  namespace?: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  limit?: number;
  continueToken?: string;
}

/** The result of a delete: either the object still exists (finalizers) or it is gone. */
export interface DeleteResult {
  object: KubeObject;
  deleted: boolean;
}

/** Hooks the CRD machinery plugs into the core. */
export interface CoreHooks {
  /** A CustomResourceDefinition was written or removed. */
  onCrdChange?(crd: KubeObject | undefined, previous: KubeObject | undefined): void;
  /** An object is being deleted and still has finalizers: the hook may work towards removing them. */
  onDeleting?(res: ResolvedResource, obj: KubeObject): void;
}
