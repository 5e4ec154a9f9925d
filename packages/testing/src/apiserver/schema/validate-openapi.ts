/**
 * The OpenAPI v3 keyword checks of a structural schema (type, formats, bounds, lengths, patterns,
 * enums, required, allOf/anyOf/oneOf/not), with kube-openapi's messages and ratcheting of unchanged
 * values.
 *
 * @module
 */
import { fieldError, formatGoFloat, goJSON, OMIT_VALUE } from "./causes.js";
import { isPlainObject, jsonEqual, jsonType } from "./json-values.js";
import type { FieldCause, SchemaNode, ValueValidation } from "./types.js";
import { correlateListItem } from "./validate-lists.js";
import { formatCached, matchesCached } from "./validation-memo.js";
import { index, openAPIPath, type Path, prop } from "./walk.js";

/** Renders a number as the Go validator does in its messages (`%v` of an int64 or a float64). */
function goNumber(value: number, asInteger: boolean): string {
  if (asInteger || Number.isInteger(value)) {
    return Number.isInteger(value) ? String(value) : String(Math.trunc(value));
  }
  return formatGoFloat(value);
}

/** Collects causes; `errorCount` lets anyOf/oneOf compare branches cheaply. */
export interface Sink {
  causes: FieldCause[];
  /** Field-path prefix when validating a subtree (`status` for writes through /status). */
  prefix?: string;
}

function withPrefix(sink: Sink, name: string): string {
  if (sink.prefix === undefined) return name.length > 0 ? name : "<nil>";
  return name.length > 0 ? `${sink.prefix}.${name}` : sink.prefix;
}

function openAPIError(
  sink: Sink,
  path: Path,
  reason: Parameters<typeof fieldError>[0],
  value: unknown,
  detail: string,
): void {
  sink.causes.push(fieldError(reason, withPrefix(sink, openAPIPath(path)), value, detail));
}

/** An error the Go validator raises without a field name: the server reports it at `<nil>`. */
function namelessError(sink: Sink, detail: string): void {
  sink.causes.push(fieldError("FieldValueInvalid", sink.prefix ?? "<nil>", "", detail));
}

/** The OpenAPI-keyword checks of one node, in the order kube-openapi runs its validators. */
export function checkValue(
  vv: ValueValidation,
  value: unknown,
  path: Path,
  sink: Sink,
  nullable: boolean,
  old: unknown,
  hasOld: boolean,
): void {
  // Ratcheting: an unchanged value keeps whatever errors it had (they are not reported).
  if (hasOld && jsonEqual(value, old)) return;
  if (value === null || value === undefined) {
    const intOrString = (vv as Partial<SchemaNode>).intOrString === true;
    if ((vv.type !== undefined || intOrString) && !nullable) {
      openAPIError(
        sink,
        path,
        "FieldValueTypeInvalid",
        "null",
        `${openAPIPath(path)} in body must be of type ${vv.type ?? "integer,string"}: "null"`,
      );
    }
    if (vv.enum !== undefined && !vv.enum.some((e) => e === null)) {
      openAPIError(sink, path, "FieldValueNotSupported", null, supportedValues(vv.enum));
    }
    return;
  }
  // type (x-kubernetes-int-or-string is checked as the type list "integer,string")
  if (vv.type === undefined && (vv as Partial<SchemaNode>).intOrString === true) {
    const actual = jsonType(value);
    if (actual !== "integer" && actual !== "string") {
      openAPIError(
        sink,
        path,
        "FieldValueTypeInvalid",
        actual,
        `${openAPIPath(path)} in body must be of type integer,string: ${JSON.stringify(actual)}`,
      );
    }
  } else if (vv.type !== undefined) {
    const actual = jsonType(value);
    const matches = actual === vv.type || (actual === "integer" && vv.type === "number");
    if (!matches) {
      openAPIError(
        sink,
        path,
        "FieldValueTypeInvalid",
        actual,
        `${openAPIPath(path)} in body must be of type ${vv.type}: ${JSON.stringify(actual)}`,
      );
    }
  }
  // allOf / anyOf / oneOf / not
  if (vv.anyOf !== undefined) checkAnyOf(vv.anyOf, value, path, sink, nullable);
  if (vv.oneOf !== undefined) checkOneOf(vv.oneOf, value, path, sink, nullable);
  if (vv.allOf !== undefined) {
    let valid = 0;
    for (const branch of vv.allOf) {
      const before = sink.causes.length;
      checkValue(branch, value, path, sink, nullable, undefined, false);
      if (sink.causes.length === before) valid++;
    }
    if (valid !== vv.allOf.length) {
      namelessError(
        sink,
        `${JSON.stringify(openAPIPath(path))} must validate all the schemas (allOf)${valid === 0 ? ". None validated" : ""}`,
      );
    }
  }
  if (vv.not !== undefined) {
    const scratch: Sink = {
      causes: [],
      ...(sink.prefix !== undefined ? { prefix: sink.prefix } : {}),
    };
    checkValue(vv.not, value, path, scratch, nullable, undefined, false);
    if (scratch.causes.length === 0) {
      namelessError(
        sink,
        `${JSON.stringify(openAPIPath(path))} must not validate the schema (not)`,
      );
    }
  }
  // string
  if (typeof value === "string") {
    // A string has at most as many runes as UTF-16 units and at least half as many: count only
    // when the length alone does not decide.
    if (
      vv.maxLength !== undefined &&
      value.length > vv.maxLength &&
      runeCount(value) > vv.maxLength
    ) {
      const max = vv.maxLength;
      openAPIError(
        sink,
        path,
        "FieldValueTooLong",
        OMIT_VALUE,
        `may not be more than ${max} ${max === 1 ? "byte" : "bytes"}`,
      );
    } else if (
      vv.minLength !== undefined &&
      value.length < 2 * vv.minLength &&
      runeCount(value) < vv.minLength
    ) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should be at least ${vv.minLength} chars long`,
      );
    } else if (vv.patternRE2 !== undefined && !matchesCached(vv.patternRE2, value)) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should match '${vv.pattern}'`,
      );
    }
    // format
    if (vv.format !== undefined && !formatCached(vv.format, value)) {
      openAPIError(
        sink,
        path,
        "FieldValueTypeInvalid",
        value,
        `${openAPIPath(path)} in body must be of type ${vv.format}: ${JSON.stringify(value)}`,
      );
    }
  }
  // number
  if (typeof value === "number") checkNumber(vv, value, path, sink);
  // array
  if (Array.isArray(value)) {
    const items = vv.items;
    if (items !== undefined) {
      // Ratcheting correlates the items of map lists by key (and of sets by value).
      const correlate =
        hasOld && Array.isArray(old) ? (vv as Partial<SchemaNode>).listType : undefined;
      for (let i = 0; i < value.length; i++) {
        let oldItem: { value: unknown } | undefined;
        if (correlate === "map") oldItem = correlateListItem(vv as SchemaNode, value[i], old);
        else if (correlate === "set" && (old as unknown[]).some((o) => jsonEqual(o, value[i]))) {
          continue;
        }
        checkValue(
          items,
          value[i],
          index(path, i),
          sink,
          isNullable(items),
          oldItem?.value,
          oldItem !== undefined,
        );
      }
    }
    if (vv.minItems !== undefined && value.length < vv.minItems) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value.length,
        `${openAPIPath(path)} in body should have at least ${vv.minItems} items`,
      );
    }
    if (vv.maxItems !== undefined && value.length > vv.maxItems) {
      const max = vv.maxItems;
      openAPIError(
        sink,
        path,
        "FieldValueTooMany",
        value.length,
        `must have at most ${max} ${max === 1 ? "item" : "items"}`,
      );
    }
  }
  // enum
  if (vv.enum !== undefined && !vv.enum.some((e) => jsonEqual(e, value) || e === value)) {
    openAPIError(sink, path, "FieldValueNotSupported", value, supportedValues(vv.enum));
  }
  // object
  if (isPlainObject(value)) checkObject(vv, value, path, sink, old, hasOld);
}

function isNullable(vv: ValueValidation): boolean {
  return (vv as Partial<SchemaNode>).nullable === true;
}

function runeCount(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const d = value.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function supportedValues(values: readonly unknown[]): string {
  if (values.length === 0) return "";
  return `supported values: ${values
    .map((v) => JSON.stringify(typeof v === "string" ? v : goJSON(v)))
    .join(", ")}`;
}

function checkNumber(vv: ValueValidation, value: number, path: Path, sink: Sink): void {
  const isInt = Number.isInteger(value);
  if (vv.multipleOf !== undefined && isInt && !Number.isInteger(vv.multipleOf)) {
    // The server checks an integer against the factor truncated to an integer (0.5 becomes 0).
    const factor = Math.trunc(vv.multipleOf);
    if (factor <= 0) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        factor,
        `factor MultipleOf declared for ${openAPIPath(path)} must be positive: ${factor}`,
      );
    } else if (value % factor !== 0) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should be a multiple of ${factor}`,
      );
    }
  } else if (vv.multipleOf !== undefined) {
    const q = value / vv.multipleOf;
    if (!Number.isInteger(q) && Math.abs(q - Math.round(q)) > 1e-9) {
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should be a multiple of ${goNumber(vv.multipleOf, isInt)}`,
      );
    }
  }
  if (vv.minimum !== undefined) {
    const min = vv.minimum;
    const fails = vv.exclusiveMinimum
      ? value <= (isInt ? Math.trunc(min) : min)
      : value < (isInt ? Math.trunc(min) : min);
    if (fails) {
      const op = vv.exclusiveMinimum ? "greater than" : "greater than or equal to";
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should be ${op} ${goNumber(min, isInt)}`,
      );
    }
  }
  if (vv.maximum !== undefined) {
    const max = vv.maximum;
    const fails = vv.exclusiveMaximum
      ? value >= (isInt ? Math.trunc(max) : max)
      : value > (isInt ? Math.trunc(max) : max);
    if (fails) {
      const op = vv.exclusiveMaximum ? "less than" : "less than or equal to";
      openAPIError(
        sink,
        path,
        "FieldValueInvalid",
        value,
        `${openAPIPath(path)} in body should be ${op} ${goNumber(max, isInt)}`,
      );
    }
  }
}

function checkObject(
  vv: ValueValidation,
  value: Record<string, unknown>,
  path: Path,
  sink: Sink,
  old: unknown,
  hasOld: boolean,
): void {
  const keys = Object.keys(value);
  if (vv.minProperties !== undefined && keys.length < vv.minProperties) {
    openAPIError(
      sink,
      path,
      "FieldValueInvalid",
      keys.length,
      `${openAPIPath(path)} in body should have at least ${vv.minProperties} properties`,
    );
  }
  if (vv.maxProperties !== undefined && keys.length > vv.maxProperties) {
    const max = vv.maxProperties;
    openAPIError(
      sink,
      path,
      "FieldValueTooMany",
      keys.length,
      `must have at most ${max} ${max === 1 ? "item" : "items"}`,
    );
  }
  const oldObject = hasOld && isPlainObject(old) ? old : undefined;
  const ap = vv.additionalProperties;
  if (ap !== undefined) {
    for (const k of keys) {
      if (vv.properties?.has(k)) continue;
      const correlated = oldObject !== undefined && k in oldObject && mapCorrelatable(vv);
      checkValue(
        ap,
        value[k],
        prop(path, k),
        sink,
        isNullable(ap),
        correlated ? oldObject?.[k] : undefined,
        correlated,
      );
    }
  }
  if (vv.required !== undefined) {
    for (const r of vv.required) {
      if (!(r in value)) {
        sink.causes.push(
          fieldError("FieldValueRequired", withPrefix(sink, openAPIPath(prop(path, r))), "", ""),
        );
      }
    }
  }
  const props = vv.properties;
  if (props !== undefined) {
    for (const k of keys) {
      const sub = props.get(k);
      if (sub === undefined) continue;
      const correlated = oldObject !== undefined && k in oldObject;
      checkValue(
        sub,
        value[k],
        prop(path, k),
        sink,
        isNullable(sub),
        correlated ? oldObject?.[k] : undefined,
        correlated,
      );
    }
  }
}

function mapCorrelatable(vv: ValueValidation): boolean {
  const mapType = (vv as Partial<SchemaNode>).mapType;
  return mapType === undefined || mapType === "granular" || mapType === "atomic";
}

function checkAnyOf(
  branches: readonly ValueValidation[],
  value: unknown,
  path: Path,
  sink: Sink,
  nullable: boolean,
): void {
  let best: FieldCause[] | undefined;
  for (const branch of branches) {
    const scratch: Sink = {
      causes: [],
      ...(sink.prefix !== undefined ? { prefix: sink.prefix } : {}),
    };
    checkValue(branch, value, path, scratch, nullable, undefined, false);
    if (scratch.causes.length === 0) return;
    if (best === undefined || scratch.causes.length < best.length) best = scratch.causes;
  }
  namelessError(
    sink,
    `${JSON.stringify(openAPIPath(path))} must validate at least one schema (anyOf)`,
  );
  if (best !== undefined) sink.causes.push(...best);
}

function checkOneOf(
  branches: readonly ValueValidation[],
  value: unknown,
  path: Path,
  sink: Sink,
  nullable: boolean,
): void {
  let best: FieldCause[] | undefined;
  let valid = 0;
  for (const branch of branches) {
    const scratch: Sink = {
      causes: [],
      ...(sink.prefix !== undefined ? { prefix: sink.prefix } : {}),
    };
    checkValue(branch, value, path, scratch, nullable, undefined, false);
    if (scratch.causes.length === 0) valid++;
    else if (valid === 0 && (best === undefined || scratch.causes.length < best.length))
      best = scratch.causes;
  }
  if (valid === 1) return;
  const detail = valid === 0 ? "Found none valid" : `Found ${valid} valid alternatives`;
  namelessError(
    sink,
    `${JSON.stringify(openAPIPath(path))} must validate one and only one schema (oneOf). ${detail}`,
  );
  if (valid === 0 && best !== undefined) sink.causes.push(...best);
}
