/**
 * The CEL walk: runs the `x-kubernetes-validations` rules of every node that has them, with transition
 * rules against the correlated old value and the server's messages and reasons.
 *
 * @module
 */
import { fieldError, OMIT_VALUE } from "./causes.js";
import { toCelValue } from "./cel.js";
import { isPlainObject, jsonEqual } from "./json-values.js";
import type { FieldCause, SchemaNode } from "./types.js";
import { correlateListItem } from "./validate-lists.js";
import { MEMO_LIMIT, passedRules } from "./validation-memo.js";
import {
  appendFieldPath,
  childNode,
  childPath,
  fieldPath,
  hasRules,
  index,
  type Path,
} from "./walk.js";

export interface CelState {
  causes: FieldCause[];
}

export function validateCEL(
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
