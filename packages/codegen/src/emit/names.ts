/**
 * Turns a field name into a PascalCase identifier part: "apiVersion" -> "ApiVersion",
 * "x-kubernetes-foo" -> "XKubernetesFoo", "3d" -> "_3d".
 *
 * @param name - the field name
 * @returns the identifier part
 */
export function pascal(name: string): string {
  const out = name
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part !== "")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  if (out === "") return "Field";
  return /^[0-9]/.test(out) ? `_${out}` : out;
}

/**
 * Names the item type of a list from the list's type name: "Conditions" -> "Condition",
 * "Policies" -> "Policy", "Addresses" -> "Address", "Data" -> "DataItem".
 *
 * @param name - the list's type name
 * @returns the item type name
 */
export function itemName(name: string): string {
  if (/ies$/.test(name)) return `${name.slice(0, -3)}y`;
  if (/(ss|x|ch|sh|z)es$/.test(name)) return name.slice(0, -2);
  if (/(ss|us|is)$/.test(name)) return `${name}Item`;
  if (/s$/.test(name)) return name.slice(0, -1);
  return `${name}Item`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Renders an object key: bare when it is an identifier, quoted otherwise.
 *
 * @param key - the key
 * @returns the key as written in an interface or object literal
 */
export function propertyKey(key: string): string {
  return IDENTIFIER.test(key) ? key : JSON.stringify(key);
}

/**
 * The namespace alias of a group/version: the group's first DNS label plus the version
 * ("cluster.x-k8s.io", "v1beta2" -> "clusterv1beta2"). When two groups share a first label, the
 * whole group is used ("infrastructureclusterxk8sio").
 *
 * @param groups - every group of the output, to detect clashes
 * @returns a function from group and version to the alias
 */
export function groupAliases(
  groups: readonly string[],
): (group: string, version: string) => string {
  const first = (group: string) =>
    (group.split(".")[0] ?? group).toLowerCase().replace(/[^a-z0-9]/g, "");
  const counts = new Map<string, number>();
  for (const group of new Set(groups))
    counts.set(first(group), (counts.get(first(group)) ?? 0) + 1);
  return (group, version) => {
    const short = first(group);
    let base = (counts.get(short) ?? 0) > 1 ? group.toLowerCase().replace(/[^a-z0-9]/g, "") : short;
    if (base === "" || /^[0-9]/.test(base)) base = `g${base}`;
    return `${base}${version.toLowerCase().replace(/[^a-z0-9]/g, "")}`;
  };
}

/**
 * Renders a key of a JavaScript object literal: like {@link propertyKey}, except that `__proto__`
 * is written as a computed key, because a literal `__proto__: x` (quoted or not) sets the object's
 * prototype instead of adding a property.
 *
 * @param key - the key
 * @returns the key as written in an object literal that runs
 */
export function literalKey(key: string): string {
  return key === "__proto__" ? '["__proto__"]' : propertyKey(key);
}

/**
 * Renders a JSON value (a default, an enum, schema keywords) as a JavaScript expression. JSON text
 * is one, except that a `"__proto__"` key in an object literal sets the prototype instead of adding
 * the key; a value holding such a key is parsed at run time instead, which keeps it.
 *
 * @param value - a JSON value
 * @returns a JavaScript expression that evaluates to the same value
 */
export function jsonLiteral(value: unknown): string {
  const json = JSON.stringify(value);
  return json.includes('"__proto__"') ? `JSON.parse(${JSON.stringify(json)})` : json;
}
