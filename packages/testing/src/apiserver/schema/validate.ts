import type { RE2JS } from "re2js";
import { fieldError, formatGoFloat, goJSON, OMIT_VALUE } from "./causes.js";
import { toCelValue } from "./cel.js";
import { checkStringFormat } from "./formats.js";
import { validateObjectMeta } from "./objectmeta.js";
import type { FieldCause, SchemaNode, ValueValidation } from "./types.js";

/**
 * A path step: a property (`.name`), an array index (`[3]`) or a map key. Map keys render as `.key` in
 * OpenAPI-validator messages but as `[key]` in field paths built by the server's own code (CEL,
 * list-type, embedded-resource checks), as the server does.
 */
type Path = { parent: Path; segment: string; kind: "prop" | "index" | "key" } | undefined;

function openAPIPath(path: Path): string {
  const parts: string[] = [];
  for (let p = path; p !== undefined; p = p.parent) {
    parts.push(p.kind === "index" ? `[${p.segment}]` : `.${p.segment}`);
  }
  const text = parts.reverse().join("");
  return text.startsWith(".") ? text.slice(1) : text;
}

function fieldPath(path: Path): string {
  const parts: string[] = [];
  for (let p = path; p !== undefined; p = p.parent) {
    parts.push(p.kind === "prop" ? `.${p.segment}` : `[${p.segment}]`);
  }
  const text = parts.reverse().join("");
  if (text.length === 0) return "<nil>";
  return text.startsWith(".") ? text.slice(1) : text;
}

function prop(parent: Path, segment: string): Path {
  return { parent, segment, kind: "prop" };
}
function index(parent: Path, i: number): Path {
  return { parent, segment: String(i), kind: "index" };
}
function key(parent: Path, segment: string): Path {
  return { parent, segment, kind: "key" };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    case "number":
      return Number.isInteger(value) ? "integer" : "number";
    default:
      return "object";
  }
}

/** Deep equality with numbers compared by value (JSON semantics). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a)) {
    if (!isPlainObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    for (const k of ka) if (!(k in b) || !jsonEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/** Renders a number as the Go validator does in its messages (`%v` of an int64 or a float64). */
function goNumber(value: number, asInteger: boolean): string {
  if (asInteger || Number.isInteger(value)) {
    return Number.isInteger(value) ? String(value) : String(Math.trunc(value));
  }
  return formatGoFloat(value);
}

/** Collects causes; `errorCount` lets anyOf/oneOf compare branches cheaply. */
interface Sink {
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
function checkValue(
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

/**
 * Regular expressions are the costliest part of validation and controllers write the same strings over
 * and over (condition types, reasons, names), so results are memoised per pattern (bounded).
 */
const regexResults = new WeakMap<RE2JS, Map<string, boolean>>();
const passedRules = new WeakMap<object, Map<string, true>>();
const formatResults = new Map<string, Map<string, boolean>>();
const MEMO_LIMIT = 4096;

function memo(table: Map<string, boolean>, value: string, compute: () => boolean): boolean {
  const cached = table.get(value);
  if (cached !== undefined) return cached;
  const result = compute();
  if (table.size >= MEMO_LIMIT) table.clear();
  table.set(value, result);
  return result;
}

function matchesCached(re: RE2JS, value: string): boolean {
  let table = regexResults.get(re);
  if (table === undefined) {
    table = new Map();
    regexResults.set(re, table);
  }
  return memo(table, value, () => re.test(value));
}

function formatCached(format: string, value: string): boolean {
  let table = formatResults.get(format);
  if (table === undefined) {
    table = new Map();
    formatResults.set(format, table);
  }
  return memo(table, value, () => checkStringFormat(format, value));
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

// ---------------------------------------------------------------------------------------------
// Structural walks: embedded resources, list-type invariants, CEL rules.

const API_VERSION = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[^/]+$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** The schema of `k` under `node` and whether it is a declared property (else a map entry). */
function childNode(node: SchemaNode, k: string): SchemaNode | undefined {
  return node.properties?.get(k) ?? node.additionalProperties;
}

function childPath(node: SchemaNode, parent: Path, k: string): Path {
  return node.properties?.has(k) === true ? prop(parent, k) : key(parent, k);
}

function validateEmbedded(node: SchemaNode, value: unknown, path: Path, out: FieldCause[]): void {
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

function scalarKey(value: unknown): string {
  if (value === undefined) return "u";
  if (value !== null && typeof value === "object") return `j${goJSON(value)}`;
  return `${typeof value}:${String(value)}`;
}

function validateListTypes(node: SchemaNode, value: unknown, path: Path, out: FieldCause[]): void {
  if (Array.isArray(value)) {
    if (node.listType === "set") {
      for (const i of firstRepeats(value.map(scalarKey))) {
        out.push(fieldError("FieldValueDuplicate", fieldPath(index(path, i)), value[i], ""));
      }
    } else if (node.listType === "map" && node.listMapKeys !== undefined) {
      validateListMap(node.listMapKeys, value, path, out);
    }
    const items = node.items;
    if (items !== undefined) {
      for (let i = 0; i < value.length; i++)
        validateListTypes(items, value[i], index(path, i), out);
    }
    return;
  }
  if (!isPlainObject(value)) return;
  for (const k of Object.keys(value)) {
    const next = childNode(node, k);
    if (next !== undefined && needsListCheck(next)) {
      validateListTypes(next, value[k], childPath(node, path, k), out);
    }
  }
}

function validateListMap(
  keys: readonly string[],
  list: unknown[],
  path: Path,
  out: FieldCause[],
): void {
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (item !== null && !isPlainObject(item)) {
      out.push(
        fieldError(
          "FieldValueInvalid",
          fieldPath(index(path, i)),
          item,
          "must be an object for an array of list-type map",
        ),
      );
      return;
    }
  }
  if (list.length <= 1) return;
  const signatures: string[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    let signature = "";
    if (isPlainObject(item)) {
      for (const k of keys) if (k in item) signature += `${k}\u0000${scalarKey(item[k])}\u0000`;
    }
    signatures[i] = signature;
  }
  for (const i of firstRepeats(signatures)) {
    const present: Record<string, unknown> = {};
    const item = list[i];
    if (isPlainObject(item)) for (const k of keys) if (k in item) present[k] = item[k];
    out.push(fieldError("FieldValueDuplicate", fieldPath(index(path, i)), present, ""));
  }
}

/** Indices of the second occurrence of each repeated value (the server reports one per value). */
function firstRepeats(keys: string[]): number[] {
  const seen = new Map<string, number>();
  const out: number[] = [];
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const times = seen.get(k) ?? 0;
    if (times === 1) out.push(i);
    seen.set(k, times + 1);
  }
  return out;
}

/** Items of a map list in `oldList` correlated with `item` by the list-map keys. */
function correlateListItem(
  node: SchemaNode,
  item: unknown,
  oldList: unknown,
): { value: unknown } | undefined {
  if (
    node.listType !== "map" ||
    node.listMapKeys === undefined ||
    !Array.isArray(oldList) ||
    !isPlainObject(item)
  ) {
    return undefined;
  }
  const keys = node.listMapKeys;
  for (const candidate of oldList) {
    if (!isPlainObject(candidate)) continue;
    if (keys.every((k) => jsonEqual(candidate[k], item[k]))) return { value: candidate };
  }
  return undefined;
}

interface CelState {
  causes: FieldCause[];
}

function validateCEL(
  node: SchemaNode,
  value: unknown,
  path: Path,
  old: unknown,
  hasOld: boolean,
  state: CelState,
): void {
  if (value === null || value === undefined) return;
  const unchanged = hasOld && jsonEqual(value, old);
  if (node.rules !== undefined) runRules(node, value, path, old, hasOld, unchanged, state);
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined || !hasRules(items)) return;
    for (let i = 0; i < value.length; i++) {
      const correlated = hasOld ? correlateListItem(node, value[i], old) : undefined;
      validateCEL(
        items,
        value[i],
        index(path, i),
        correlated?.value,
        correlated !== undefined,
        state,
      );
    }
    return;
  }
  if (!isPlainObject(value)) return;
  const oldObject = hasOld && isPlainObject(old) ? old : undefined;
  const correlatable =
    node.mapType === undefined || node.mapType === "granular" || node.mapType === "atomic";
  for (const k of Object.keys(value)) {
    const next = childNode(node, k);
    if (next === undefined || !hasRules(next)) continue;
    const has = correlatable && oldObject !== undefined && k in oldObject;
    validateCEL(
      next,
      value[k],
      childPath(node, path, k),
      has ? oldObject?.[k] : undefined,
      has,
      state,
    );
  }
}

function runRules(
  node: SchemaNode,
  value: unknown,
  path: Path,
  old: unknown,
  hasOld: boolean,
  unchanged: boolean,
  state: CelState,
): void {
  const rules = node.rules ?? [];
  let self: unknown;
  let oldSelf: unknown;
  let converted = false;
  let valueKey: string | undefined;
  for (const rule of rules) {
    if (rule.usesOldSelf && !hasOld && !rule.optionalOldSelf) continue;
    // Ratcheting: a rule that does not look at oldSelf is not enforced on an unchanged value.
    if (!rule.usesOldSelf && unchanged) continue;
    // A rule that only reads self and passed for this value before passes again.
    let passed: Map<string, true> | undefined;
    if (!rule.usesOldSelf) {
      valueKey ??= JSON.stringify(value);
      passed = passedRules.get(rule);
      if (passed?.has(valueKey)) continue;
    }
    if (!converted) {
      self = toCelValue(node, value);
      oldSelf = hasOld ? toCelValue(node, old) : null;
      converted = true;
    }
    let result: unknown;
    const at =
      rule.normalizedFieldPath !== undefined && rule.normalizedFieldPath.length > 0
        ? appendFieldPath(path, rule.normalizedFieldPath)
        : path;
    const typeName =
      node.type ??
      (node.intOrString ? (typeof value === "string" ? "string" : "integer") : "object");
    const badValue = typeName === "object" || typeName === "array" ? OMIT_VALUE : value;
    try {
      result = rule.evaluate(self, oldSelf, hasOld);
    } catch (error) {
      const raw = (error as Error).message.split("\n")[0] ?? String(error);
      // cel-go spells its runtime errors in lower case ("no such key: x").
      const message = raw.replace(/^No such key/, "no such key");
      state.causes.push(
        fieldError(
          "FieldValueInvalid",
          fieldPath(path),
          typeName,
          `${message} evaluating rule: ${ruleErrorString(rule)}`,
        ),
      );
      continue;
    }
    if (result === true) {
      if (!rule.usesOldSelf && valueKey !== undefined) {
        if (passed === undefined) {
          passed = new Map();
          passedRules.set(rule, passed);
        }
        if (passed.size >= MEMO_LIMIT) passed.clear();
        passed.set(valueKey, true);
      }
      continue;
    }
    let detail: string | undefined;
    if (rule.evaluateMessage !== undefined) {
      try {
        const message = rule.evaluateMessage(self, oldSelf, hasOld);
        if (typeof message === "string" && message.trim().length > 0 && !/[\r\n]/.test(message))
          detail = message;
      } catch {
        // Like the server: a failing messageExpression falls back to the static message.
      }
    }
    detail ??=
      rule.message !== undefined && rule.message.length > 0
        ? rule.message.trim()
        : `failed rule: ${ruleErrorString(rule)}`;
    const field = fieldPath(at);
    switch (rule.reason) {
      case "FieldValueForbidden":
        state.causes.push(fieldError("FieldValueForbidden", field, undefined, detail));
        break;
      case "FieldValueRequired":
        state.causes.push(fieldError("FieldValueRequired", field, undefined, detail));
        break;
      case "FieldValueDuplicate":
        state.causes.push(fieldError("FieldValueDuplicate", field, badValue, ""));
        break;
      default:
        state.causes.push(fieldError("FieldValueInvalid", field, badValue, detail));
    }
  }
}

function ruleErrorString(rule: { message?: string; rule: string }): string {
  return rule.message !== undefined && rule.message.length > 0
    ? rule.message.trim()
    : rule.rule.trim();
}

function appendFieldPath(path: Path, suffix: string): Path {
  let out = path;
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  for (const m of suffix.matchAll(re)) {
    if (m[2] !== undefined) out = index(out, Number(m[2]));
    else if (m[1] !== undefined) out = prop(out, m[1]);
  }
  return out;
}

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

const GO_TYPE: Record<string, string> = {
  string: "string",
  integer: "int64",
  number: "float64",
  boolean: "bool",
  object: "map[string]interface {}",
  array: "[]interface {}",
};

function goValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isPlainObject(value)) {
    return `map[${Object.keys(value)
      .sort()
      .map((k) => `${k}:${goValue(value[k])}`)
      .join(" ")}]`;
  }
  return String(value);
}

/** `unstructured.NestedInt64`/`NestedString` as the scale checks use them. */
function checkScaleField(
  obj: unknown,
  jsonPath: string,
  want: "int64" | "string",
  out: FieldCause[],
): void {
  const fields = jsonPath.replace(/^\./, "").split(".");
  let current: unknown = obj;
  for (let i = 0; i < fields.length; i++) {
    if (!isPlainObject(current)) {
      const at = `.${fields.join(".")}`;
      out.push(
        fieldError(
          "FieldValueInvalid",
          jsonPath,
          want === "int64" ? 0 : "",
          `${at} accessor error: ${goValue(current)} is of the type ${GO_TYPE[jsonType(current)] ?? "interface {}"}, expected map[string]interface{}`,
        ),
      );
      return;
    }
    const key = fields[i] as string;
    if (!(key in current)) return;
    current = current[key];
  }
  const actual = jsonType(current);
  const ok = want === "int64" ? actual === "integer" : actual === "string";
  if (!ok) {
    out.push(
      fieldError(
        "FieldValueInvalid",
        jsonPath,
        want === "int64" ? 0 : "",
        `.${fields.join(".")} accessor error: ${goValue(current)} is of the type ${GO_TYPE[actual] ?? "interface {}"}, expected ${want}`,
      ),
    );
    return;
  }
  if (want === "int64") {
    const n = current as number;
    if (n < 0)
      out.push(fieldError("FieldValueInvalid", jsonPath, n, "should be a non-negative integer"));
    else if (n > 2147483647) {
      out.push(
        fieldError("FieldValueInvalid", jsonPath, n, "should be less than or equal to 2147483647"),
      );
    }
  }
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

function causes(out: FieldCause[], more: FieldCause[]): void {
  for (const c of more) out.push(c);
}

/** Whether `here` holds for `node` or any node below it (cached per node and predicate). */
function subtreeHas(
  cache: WeakMap<SchemaNode, boolean>,
  node: SchemaNode,
  here: (n: SchemaNode) => boolean,
): boolean {
  const cached = cache.get(node);
  if (cached !== undefined) return cached;
  let found = here(node);
  if (!found && node.properties !== undefined) {
    for (const sub of node.properties.values()) if (subtreeHas(cache, sub, here)) found = true;
  }
  if (!found && node.items !== undefined) found = subtreeHas(cache, node.items, here);
  if (!found && node.additionalProperties !== undefined) {
    found = subtreeHas(cache, node.additionalProperties, here);
  }
  cache.set(node, found);
  return found;
}

const rulesCache = new WeakMap<SchemaNode, boolean>();
const embeddedCache = new WeakMap<SchemaNode, boolean>();
const listCache = new WeakMap<SchemaNode, boolean>();
const ruleAt = (n: SchemaNode) => n.rules !== undefined && n.rules.length > 0;
const embeddedAt = (n: SchemaNode) => n.embeddedResource;
const listInvariantAt = (n: SchemaNode) => n.listType === "set" || n.listType === "map";

function hasRules(node: SchemaNode): boolean {
  return subtreeHas(rulesCache, node, ruleAt);
}

function needsEmbeddedCheck(node: SchemaNode): boolean {
  return subtreeHas(embeddedCache, node, embeddedAt);
}

function needsListCheck(node: SchemaNode): boolean {
  return subtreeHas(listCache, node, listInvariantAt);
}
