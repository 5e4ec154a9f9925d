/**
 * Checks of `x-kubernetes-embedded-resource` values: `apiVersion` and `kind` present and well formed,
 * and their `metadata` valid as object metadata.
 *
 * @module
 */
import { fieldError } from "./causes.js";
import { isPlainObject } from "./json-values.js";
import { validateObjectMeta } from "./objectmeta.js";
import type { FieldCause, SchemaNode } from "./types.js";
import {
  childNode,
  childPath,
  fieldPath,
  index,
  needsEmbeddedCheck,
  type Path,
  prop,
} from "./walk.js";

const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[^/]+$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function validateEmbedded(
  node: SchemaNode,
  value: unknown,
  path: Path,
  out: FieldCause[],
): void {
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined || !needsEmbeddedCheck(items)) return;
    for (let i = 0; i < value.length; i++) validateEmbedded(items, value[i], index(path, i), out);
    return;
  }
  if (!isPlainObject(value)) return;
  if (node.embeddedResource) {
    if (!("apiVersion" in value))
      out.push(fieldError("FieldValueRequired", fieldPath(prop(path, "apiVersion")), "", ""));
    if (!("kind" in value))
      out.push(fieldError("FieldValueRequired", fieldPath(prop(path, "kind")), "", ""));
    const apiVersion = value.apiVersion;
    if ("apiVersion" in value) {
      const at = fieldPath(prop(path, "apiVersion"));
      if (typeof apiVersion !== "string")
        out.push(fieldError("FieldValueInvalid", at, apiVersion, "must be a string"));
      else if (apiVersion.length === 0)
        out.push(fieldError("FieldValueInvalid", at, apiVersion, "must not be empty"));
      else if (!API_VERSION.test(apiVersion) || apiVersion.split("/").length > 2) {
        out.push(
          fieldError(
            "FieldValueInvalid",
            at,
            apiVersion,
            `unexpected GroupVersion string: ${apiVersion}`,
          ),
        );
      }
    }
    const kind = value.kind;
    if ("kind" in value) {
      const at = fieldPath(prop(path, "kind"));
      if (typeof kind !== "string")
        out.push(fieldError("FieldValueInvalid", at, kind, "must be a string"));
      else if (kind.length === 0)
        out.push(fieldError("FieldValueInvalid", at, kind, "must not be empty"));
      else if (!DNS1035_LABEL.test(kind.toLowerCase()) || kind.length > 63) {
        out.push(
          fieldError(
            "FieldValueInvalid",
            at,
            kind,
            "may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
          ),
        );
      }
    }
  }
  if (node.embeddedResource && isPlainObject(value.metadata)) {
    causes(
      out,
      validateObjectMeta(value.metadata, {
        nameRule: "pathSegment",
        at: fieldPath(prop(path, "metadata")),
        requireName: false,
      }),
    );
  }
  for (const k of Object.keys(value)) {
    const next = childNode(node, k);
    if (next !== undefined && needsEmbeddedCheck(next)) {
      validateEmbedded(next, value[k], childPath(node, path, k), out);
    }
  }
}

function causes(out: FieldCause[], more: FieldCause[]): void {
  for (const c of more) out.push(c);
}
