// Kubernetes' own rules for the names of a CRD (k8s.io/apimachinery's IsDNS1123Subdomain and
// IsDNS1035Label, as apiextensions validation applies them). The generator turns these names into
// folders, file names, import specifiers and identifiers, so a name the API server would refuse is
// refused here before it is used.

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Why a value is not a DNS-1123 subdomain (lowercase alphanumerics, "-" and ".", each label
 * starting and ending with an alphanumeric, at most 253 characters), or undefined when it is one.
 *
 * @param value - the name
 * @returns the problem, or undefined
 */
export function dns1123SubdomainProblem(value: string): string | undefined {
  if (value.length > 253) return "must be no more than 253 characters";
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')";
  }
  return undefined;
}

/**
 * Why a value is not a DNS-1035 label (lowercase alphanumerics and "-", starting with a letter and
 * ending with an alphanumeric, at most 63 characters), or undefined when it is one.
 *
 * @param value - the name
 * @returns the problem, or undefined
 */
export function dns1035LabelProblem(value: string): string | undefined {
  if (value.length > 63) return "must be no more than 63 characters";
  if (!DNS1035_LABEL.test(value)) {
    return "must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit (e.g. 'v1beta2', 'widgets')";
  }
  return undefined;
}

/**
 * Words that cannot name an interface, class or constant in TypeScript (reserved words, strict-mode
 * reserved words and the predefined type names), and the names the interface modules import.
 */
const NOT_A_KIND_NAME = new Set([
  // ECMAScript reserved and strict-mode reserved words.
  "await",
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "implements",
  "import",
  "in",
  "instanceof",
  "interface",
  "let",
  "new",
  "null",
  "package",
  "private",
  "protected",
  "public",
  "return",
  "static",
  "super",
  "switch",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "var",
  "void",
  "while",
  "with",
  "yield",
  // TypeScript's predefined type names cannot name an interface.
  "any",
  "bigint",
  "boolean",
  "never",
  "number",
  "object",
  "string",
  "symbol",
  "undefined",
  "unknown",
  // Imported by the generated interface modules.
  "c",
  "t",
  "z",
  "V1ListMeta",
  "V1ObjectMeta",
]);

/**
 * Why a kind (or list kind) cannot be used, or undefined when it can: Kubernetes wants a DNS-1035
 * label in any case ("MachinePool"), and the generator names interfaces and classes after it, so
 * it must also be a TypeScript identifier: letters and digits only, and not a reserved word.
 *
 * @param value - the kind
 * @returns the problem, or undefined
 */
export function kindProblem(value: string): string | undefined {
  const label = dns1035LabelProblem(value.toLowerCase());
  if (label !== undefined) return `may have mixed case, but otherwise ${label}`;
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(value)) {
    return "must be letters and digits only: it names TypeScript interfaces and classes";
  }
  if (NOT_A_KIND_NAME.has(value)) {
    return `${JSON.stringify(value)} is a TypeScript reserved word or a name the generated modules import; rename the kind`;
  }
  return undefined;
}
