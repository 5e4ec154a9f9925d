import { badRequest } from "./errors.js";

/** A parsed label selector: every requirement must hold. */
export type LabelRequirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!" };

/** Evaluates a parsed label selector against an object's labels. */
export function matchesLabels(
  requirements: LabelRequirement[],
  labels: Record<string, string> | undefined,
): boolean {
  for (const r of requirements) {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const value = has ? labels?.[r.key] : undefined;
    switch (r.op) {
      case "=":
        if (value !== r.value) return false;
        break;
      case "!=":
        if (value === r.value) return false;
        break;
      case "in":
        if (value === undefined || !r.values.includes(value)) return false;
        break;
      case "notin":
        if (value !== undefined && r.values.includes(value)) return false;
        break;
      case "exists":
        if (!has) return false;
        break;
      case "!":
        if (has) return false;
        break;
    }
  }
  return true;
}

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * Parses a label selector string (`a=b,c!=d,e in (f,g),!h,i`) the way apimachinery does.
 * Throws a 400 BadRequest naming the offending part.
 */
export function parseLabelSelector(input: string | undefined): LabelRequirement[] {
  if (input === undefined || input.trim() === "") return [];
  const out: LabelRequirement[] = [];
  for (const raw of splitTopLevel(input)) {
    const part = raw.trim();
    if (part === "")
      throw badRequest(`unable to parse requirement: empty requirement in "${input}"`);
    const setMatch = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (setMatch) {
      const key = checkKey(setMatch[1] ?? "", input);
      const values = (setMatch[3] ?? "")
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v !== "");
      for (const v of values) checkValue(v, input);
      out.push({ key, op: setMatch[2] as "in" | "notin", values });
      continue;
    }
    const eqMatch = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (eqMatch) {
      const key = checkKey(eqMatch[1] ?? "", input);
      const value = checkValue(eqMatch[3] ?? "", input);
      out.push({ key, op: eqMatch[2] === "!=" ? "!=" : "=", value });
      continue;
    }
    if (part.startsWith("!")) {
      out.push({ key: checkKey(part.slice(1).trim(), input), op: "!" });
      continue;
    }
    out.push({ key: checkKey(part, input), op: "exists" });
  }
  return out;
}

function splitTopLevel(input: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of input) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

function checkKey(key: string, input: string): string {
  const name = key.includes("/") ? key.slice(key.indexOf("/") + 1) : key;
  if (!LABEL_KEY.test(key) || name.length > 63) {
    throw badRequest(
      `unable to parse requirement: invalid label key "${key}" in selector "${input}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
  return key;
}

function checkValue(value: string, input: string): string {
  if (!LABEL_VALUE.test(value) || value.length > 63) {
    throw badRequest(
      `unable to parse requirement: invalid label value: "${value}" in selector "${input}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
  return value;
}

/** One `field=value` / `field!=value` term of a field selector. */
export interface FieldRequirement {
  field: string;
  op: "=" | "!=";
  value: string;
}

/**
 * Parses a field selector and checks every field is one the resource supports
 * (`metadata.name`, `metadata.namespace`, plus kind-specific fields), answering 400 like the server.
 */
export function parseFieldSelector(
  input: string | undefined,
  supported: readonly string[],
): FieldRequirement[] {
  if (input === undefined || input.trim() === "") return [];
  const out: FieldRequirement[] = [];
  for (const raw of input.split(",")) {
    const part = raw.trim();
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${input}'; can't understand '${part}'`);
    const field = (m[1] ?? "").trim();
    if (!supported.includes(field)) {
      const known = supported.map((f) => JSON.stringify(f)).join(", ");
      throw badRequest(`${JSON.stringify(field)} is not a known field selector: only ${known}`);
    }
    out.push({ field, op: m[2] === "!=" ? "!=" : "=", value: (m[3] ?? "").trim() });
  }
  return out;
}

/** Evaluates field requirements; `fieldValue` reads a dotted field from the object. */
export function matchesFields(
  requirements: FieldRequirement[],
  obj: Record<string, unknown>,
): boolean {
  for (const r of requirements) {
    const actual = readField(obj, r.field);
    if (r.op === "=" ? actual !== r.value : actual === r.value) return false;
  }
  return true;
}

function readField(obj: Record<string, unknown>, path: string): string {
  let cur: unknown = obj;
  for (const seg of path.split(".")) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[seg];
  }
  if (cur === undefined || cur === null) return "";
  return String(cur);
}
