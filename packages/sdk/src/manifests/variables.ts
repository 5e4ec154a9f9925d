/**
 * clusterctl variables in release assets: `${NAME}`, `${NAME:=default}`, `${NAME:-default}`,
 * `${NAME=default}` and `${NAME-default}`, as `clusterctl init` and `clusterctl generate` substitute
 * them (from the environment or clusterctl's config file). A provider's tests substitute them the same
 * way before applying `infrastructure-components.yaml` to a real API server, so a Secret whose data is
 * `${FOO_B64ENCODED_CREDENTIALS}` is checked as users get it.
 *
 * @module
 */

/** One variable of a text: its name and the default it carries, if any. */
export interface ClusterctlVariable {
  /** The variable's name, e.g. `FOO_B64ENCODED_CREDENTIALS`. */
  readonly name: string;
  /** The default after `:=`, `:-`, `=` or `-`; `undefined` when the variable has none (required). */
  readonly default: string | undefined;
}

// The operators mean the same to clusterctl's substitution for our purpose: with ':' an empty value
// takes the default too; without it only an unset one does.
const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[=-])([^}]*))?\}/g;

/**
 * The variables `text` uses, each once, in order of first use.
 *
 * @example
 * ```ts
 * clusterctlVariables("--log-level=${FOO_LOG_LEVEL:=info} ${FOO_B64ENCODED_CREDENTIALS}");
 * // [{ name: "FOO_LOG_LEVEL", default: "info" }, { name: "FOO_B64ENCODED_CREDENTIALS", default: undefined }]
 * ```
 */
export function clusterctlVariables(text: string): ClusterctlVariable[] {
  const seen = new Map<string, ClusterctlVariable>();
  for (const match of text.matchAll(VARIABLE)) {
    const name = match[1] as string;
    if (!seen.has(name)) seen.set(name, { name, default: match[2] ? (match[3] ?? "") : undefined });
  }
  return [...seen.values()];
}

/**
 * Replaces every clusterctl variable of `text` with its value from `values` (or its default), as
 * `clusterctl generate` does. Values are inserted as text, never interpreted. Throws, naming every
 * variable that has neither a value nor a default, as clusterctl refuses them.
 *
 * @example
 * ```ts
 * const yaml = substituteClusterctlVariables(componentsYAML(objects), {
 *   FOO_B64ENCODED_CREDENTIALS: Buffer.from("test-key").toString("base64"),
 * });
 * ```
 */
export function substituteClusterctlVariables(
  text: string,
  values: Readonly<Record<string, string | undefined>>,
): string {
  const missing = new Set<string>();
  const out = text.replace(
    VARIABLE,
    (_whole, name: string, operator: string | undefined, fallback: string | undefined) => {
      const value = Object.hasOwn(values, name) ? values[name] : undefined;
      if (value !== undefined && !(operator?.startsWith(":") && value === "")) return value;
      if (operator !== undefined) return fallback ?? "";
      missing.add(name);
      return "";
    },
  );
  if (missing.size > 0) {
    throw new Error(
      `value for variables [${[...missing].join(", ")}] is not set: pass each (clusterctl reads them from the environment or its config file)`,
    );
  }
  return out;
}
