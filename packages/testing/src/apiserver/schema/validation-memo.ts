/**
 * Bounded memo tables of validation results (patterns, formats and CEL rules that passed), shared by
 * the OpenAPI checks and the CEL walk.
 *
 * @module
 */
import type { RE2JS } from "re2js";
import { checkStringFormat } from "./formats.js";

/**
 * Regular expressions are the costliest part of validation and controllers write the same strings over
 * and over (condition types, reasons, names), so results are memoised per pattern (bounded).
 */
const regexResults = new WeakMap<RE2JS, Map<string, boolean>>();
export const passedRules = new WeakMap<object, Map<string, true>>();
const formatResults = new Map<string, Map<string, boolean>>();
export const MEMO_LIMIT = 4096;

function memo(table: Map<string, boolean>, value: string, compute: () => boolean): boolean {
  const cached = table.get(value);
  if (cached !== undefined) return cached;
  const result = compute();
  if (table.size >= MEMO_LIMIT) table.clear();
  table.set(value, result);
  return result;
}

export function matchesCached(re: RE2JS, value: string): boolean {
  let table = regexResults.get(re);
  if (table === undefined) {
    table = new Map();
    regexResults.set(re, table);
  }
  return memo(table, value, () => re.test(value));
}

export function formatCached(format: string, value: string): boolean {
  let table = formatResults.get(format);
  if (table === undefined) {
    table = new Map();
    formatResults.set(format, table);
  }
  return memo(table, value, () => checkStringFormat(format, value));
}
