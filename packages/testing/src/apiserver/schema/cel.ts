import { Environment, Optional } from "@marcbachmann/cel-js";
import type { CompiledRule, SchemaNode, SkippedRule } from "./types.js";

const REASONS = new Set([
  "FieldValueInvalid",
  "FieldValueForbidden",
  "FieldValueRequired",
  "FieldValueDuplicate",
]);

const environments = new Map<boolean, Environment>();

/**
 * The CEL environment for `x-kubernetes-validations`: `self` and `oldSelf` as dynamic values (`oldSelf`
 * an optional for rules with `optionalOldSelf`), plus the Kubernetes library functions this engine
 * provides beyond the CEL standard library.
 */
function environment(optionalOldSelf: boolean): Environment {
  const cached = environments.get(optionalOldSelf);
  if (cached !== undefined) return cached;
  const env = new Environment({
    unlistedVariablesAreDyn: false,
    homogeneousAggregateLiterals: false,
    enableOptionalTypes: true,
  })
    .registerVariable("self", "dyn")
    .registerVariable("oldSelf", optionalOldSelf ? "optional<dyn>" : "dyn")
    // Kubernetes list library.
    .registerFunction("list.isSorted(): bool", (list: unknown[]) => {
      for (let i = 1; i < list.length; i++) {
        if (compareScalars(list[i - 1], list[i]) > 0) return false;
      }
      return true;
    })
    .registerFunction("list.indexOf(dyn): int", (list: unknown[], value: unknown) =>
      BigInt(list.findIndex((x) => celEquals(x, value))),
    )
    .registerFunction("list.lastIndexOf(dyn): int", (list: unknown[], value: unknown) => {
      for (let i = list.length - 1; i >= 0; i--) if (celEquals(list[i], value)) return BigInt(i);
      return -1n;
    })
    // Kubernetes URL library (subset).
    .registerFunction("isURL(string): bool", (value: string) => {
      try {
        new URL(value);
        return true;
      } catch {
        return value.startsWith("/");
      }
    });
  environments.set(optionalOldSelf, env);
  return env;
}

function compareScalars(a: unknown, b: unknown): number {
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function celEquals(a: unknown, b: unknown): boolean {
  if (typeof a === "bigint" || typeof b === "bigint") return Number(a) === Number(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => celEquals(x, b[i]));
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !celEquals(v, b.get(k))) return false;
    return true;
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every(
      (k) =>
        k in b && celEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    );
  }
  return a === b;
}

/** Whether the expression refers to the `oldSelf` variable (a transition rule). */
function referencesOldSelf(expression: string): boolean {
  // Strip string literals so `'oldSelf'` inside quotes does not count.
  const code = expression.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
  return /(^|[^.\w])oldSelf\b/.test(code);
}

/**
 * Normalises a rule's `fieldPath` (`.spec.foo`, `.list[0]`, `['a.b']`) into the field-path suffix the
 * server appends to the node path.
 */
export function normalizeRuleFieldPath(fieldPath: string): string {
  let out = "";
  const re = /\.([A-Za-z_][\w-]*)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[(\d+)\]/y;
  let pos = 0;
  while (pos < fieldPath.length) {
    re.lastIndex = pos;
    const m = re.exec(fieldPath);
    if (m === null) throw new Error(`invalid fieldPath ${JSON.stringify(fieldPath)}`);
    if (m[1] !== undefined) out += out.length > 0 ? `.${m[1]}` : m[1];
    else if (m[2] !== undefined) {
      const key = m[2].replace(/\\(.)/g, "$1");
      out += out.length > 0 ? `.${key}` : key;
    } else out += `[${m[3]}]`;
    pos = re.lastIndex;
  }
  return out;
}

/** Compiles one `x-kubernetes-validations` entry, or explains why it cannot be enforced here. */
export function compileRule(
  entry: Record<string, unknown>,
  path: string,
): { rule: CompiledRule } | { error: SkippedRule } {
  const source = String(entry.rule);
  const skip = (error: string) => ({ error: { path, rule: source, error } });
  const env = environment(entry.optionalOldSelf === true);
  let program: ReturnType<Environment["parse"]>;
  let messageProgram: ReturnType<Environment["parse"]> | undefined;
  try {
    program = env.parse(source);
    const checked = program.check();
    if (!checked.valid) return skip(checked.error?.message ?? "type check failed");
    if (typeof entry.messageExpression === "string" && entry.messageExpression.length > 0) {
      messageProgram = env.parse(entry.messageExpression);
      const checkedMessage = messageProgram.check();
      if (!checkedMessage.valid) {
        return skip(`messageExpression: ${checkedMessage.error?.message ?? "type check failed"}`);
      }
    }
  } catch (error) {
    return skip((error as Error).message.split("\n")[0] ?? String(error));
  }
  const reason =
    typeof entry.reason === "string" && REASONS.has(entry.reason) ? entry.reason : undefined;
  let normalizedFieldPath: string | undefined;
  if (typeof entry.fieldPath === "string" && entry.fieldPath.length > 0) {
    try {
      normalizedFieldPath = normalizeRuleFieldPath(entry.fieldPath);
    } catch (error) {
      return skip((error as Error).message);
    }
  }
  const optionalOldSelf = entry.optionalOldSelf === true;
  const activation = (self: unknown, oldSelf: unknown, hasOld: boolean) => ({
    self,
    oldSelf: optionalOldSelf ? (hasOld ? Optional.of(oldSelf) : Optional.none()) : oldSelf,
  });
  const rule: CompiledRule = {
    rule: source,
    usesOldSelf: referencesOldSelf(source),
    optionalOldSelf,
    evaluate: (self, oldSelf, hasOld) => program(activation(self, oldSelf, hasOld)),
  };
  if (typeof entry.message === "string") rule.message = entry.message;
  if (typeof entry.fieldPath === "string") rule.fieldPath = entry.fieldPath;
  if (normalizedFieldPath !== undefined) rule.normalizedFieldPath = normalizedFieldPath;
  if (reason !== undefined) rule.reason = reason;
  if (messageProgram !== undefined && typeof entry.messageExpression === "string") {
    const message = messageProgram;
    rule.messageExpression = entry.messageExpression;
    rule.evaluateMessage = (self, oldSelf, hasOld) => message(activation(self, oldSelf, hasOld));
  }
  return { rule };
}

/**
 * Converts a JSON value to the CEL value the server would see: integers of `integer` (and
 * int-or-string) fields become `int` (BigInt), other numbers `double`; objects become maps.
 */
export function toCelValue(node: SchemaNode | undefined, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") {
    if (node === undefined) return Number.isInteger(value) ? BigInt(value) : value;
    if (node.type === "integer" || node.intOrString) {
      return Number.isInteger(value) ? BigInt(value) : value;
    }
    if (node.type === "number") return value;
    return Number.isInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) return value.map((item) => toCelValue(node?.items, item));
  if (typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      const childNode = node?.properties?.get(key) ?? node?.additionalProperties;
      out[key] = toCelValue(childNode, child);
    }
    return out;
  }
  return value;
}
