/**
 * Validation of a custom resource against its structural schema, in the order kube-apiserver runs the
 * steps; each step lives in a `validate-*` module of its own.
 *
 * @module
 */
import { fieldError } from "./causes.js";
import { isPlainObject } from "./json-values.js";
import { validateObjectMeta } from "./objectmeta.js";
import type { FieldCause, SchemaNode } from "./types.js";
import { type CelState, validateCEL } from "./validate-cel.js";
import { validateEmbedded } from "./validate-embedded.js";
import { validateListTypes } from "./validate-lists.js";
import { checkValue, type Sink } from "./validate-openapi.js";
import { checkScaleField } from "./validate-scale.js";
import { hasRules, needsEmbeddedCheck, needsListCheck } from "./walk.js";

const BLOCKING = new Set([
  "FieldValueNotSupported",
  "FieldValueRequired",
  "FieldValueTooLong",
  "FieldValueTooMany",
  "FieldValueTypeInvalid",
]);

/** Options of {@link validate}. */
export interface ValidateOptions {
  /**
   * `status` for a write through the /status subresource: the OpenAPI checks cover `status` only and
   * name fields relative to it in messages (`conditions[0].type in body …` at field
   * `status.conditions[0].type`), and `metadata` is not re-validated, as on the server.
   */
  subresource?: "status";
  /**
   * Also validate the root `metadata` (name a DNS-1123 subdomain or generateName, labels,
   * annotations), as the generic registry does for every kind. Off by default because the in-memory
   * server's core already runs that check for all kinds.
   */
  objectMeta?: boolean;
  /** The CRD's scale subresource: the replicas fields must be int64 values within 0…2147483647. */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
}

/**
 * Validates a custom resource as the server's create/update strategy does: object metadata, the
 * OpenAPI schema, the scale subresource fields, embedded resources, `x-kubernetes-list-type`
 * invariants, then CEL rules (skipped, with the server's notice, when an earlier error makes the object
 * unusable). With `old`, unchanged values are ratcheted (their errors are not reported) and transition
 * rules run.
 */
export function validate(
  root: SchemaNode,
  obj: unknown,
  old?: unknown,
  options: ValidateOptions = {},
): FieldCause[] {
  const hasOld = old !== undefined && old !== null;
  const causes: FieldCause[] = [];
  const sink: Sink = { causes };
  if (options.subresource === "status") {
    const statusNode = root.properties?.get("status");
    const status = isPlainObject(obj) ? obj.status : undefined;
    if (statusNode !== undefined && status !== undefined) {
      const oldStatus = isPlainObject(old) ? old.status : undefined;
      checkValue(
        statusNode,
        status,
        undefined,
        { causes, prefix: "status" },
        statusNode.nullable,
        oldStatus,
        oldStatus !== undefined,
      );
    }
  } else {
    if (options.objectMeta === true && isPlainObject(obj)) {
      causes.push(...validateObjectMeta(obj.metadata));
    }
    checkValue(root, obj, undefined, sink, false, old, hasOld);
    if (options.scale !== undefined)
      checkScaleField(obj, options.scale.specReplicasPath, "int64", causes);
  }
  if (options.scale !== undefined) {
    checkScaleField(obj, options.scale.statusReplicasPath, "int64", causes);
    if (options.scale.labelSelectorPath !== undefined) {
      checkScaleField(obj, options.scale.labelSelectorPath, "string", causes);
    }
  }
  if (needsEmbeddedCheck(root)) validateEmbedded(root, obj, undefined, causes);
  const listCauses: FieldCause[] = [];
  if (needsListCheck(root)) {
    if (hasOld) validateListTypes(root, old, undefined, listCauses);
    if (listCauses.length === 0) validateListTypes(root, obj, undefined, causes);
  }
  if (causes.some((c) => BLOCKING.has(c.reason))) {
    if (hasRules(root)) {
      causes.push(
        fieldError(
          "FieldValueInvalid",
          "<nil>",
          null,
          "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ),
      );
    }
    return causes;
  }
  const state: CelState = { causes };
  if (hasRules(root)) validateCEL(root, obj, undefined, old, hasOld, state);
  return causes;
}
