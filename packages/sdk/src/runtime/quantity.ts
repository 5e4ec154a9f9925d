/**
 * Kubernetes quantities (`resource.Quantity` of apimachinery: `"2"`, `"500m"`, `"16Gi"`, `"1e3"`),
 * the one grammar of the SDK for them: the CRD patterns of quantity fields and the checks of values
 * the SDK writes or reads are built from it, so a value accepted here is one Go's
 * `resource.ParseQuantity` accepts too.
 *
 * @module
 */

const NUMBER = "(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)";
// Binary (Ki…Ei), decimal SI (n, u, m, none, k, M, G, T, P, E) or a decimal exponent. Go's parser
// takes an integer exponent only, so the exponent here is one, stricter than the OpenAPI pattern
// controller-gen writes (which lets "1e1.5" through to a parser that then refuses it).
const SUFFIX = "(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?";

/**
 * A Kubernetes quantity, sign included (RE2 and JavaScript syntax alike), for a CRD `pattern`.
 *
 * @example
 * ```ts
 * new RegExp(QUANTITY_PATTERN).test("-1.5Gi"); // true
 * ```
 */
export const QUANTITY_PATTERN = `^[+-]?${NUMBER}${SUFFIX}$`;

/**
 * A Kubernetes quantity without a sign: what a capacity or a size is (never negative).
 *
 * @example
 * ```ts
 * new RegExp(UNSIGNED_QUANTITY_PATTERN).test("-1"); // false
 * ```
 */
export const UNSIGNED_QUANTITY_PATTERN = `^${NUMBER}${SUFFIX}$`;

const QUANTITY = new RegExp(QUANTITY_PATTERN);

const BINARY: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const EXAMPLES = 'e.g. "2", "500m", "1.5Gi" or "4e3"';

/**
 * Parses a Kubernetes quantity into its value in base units, as a JavaScript number (`"500m"` is
 * `0.5`, `"1Ki"` is `1024`, `"2e3"` is `2000`): precise enough to compare and sum resource sizes,
 * not to print a quantity back (keep the string for that).
 *
 * The grammar is apimachinery's: an optional sign, a decimal number (`1`, `1.5`, `.5`, `5.`), then
 * nothing, a binary suffix (`Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`), a decimal one (`n`, `u`, `m`, `k`,
 * `M`, `G`, `T`, `P`, `E`) or an exponent (`e3`, `E-2`). No spaces, no `K` or `ki`.
 *
 * @throws Error naming the input (its first 40 characters), what is wrong and a valid example.
 * @example
 * ```ts
 * parseQuantity("16Gi"); // 17179869184
 * parseQuantity("250m"); // 0.25
 * parseQuantity("lots"); // throws: not a Kubernetes quantity
 * ```
 */
export function parseQuantity(text: string): number {
  if (typeof text !== "string") {
    throw new TypeError(
      `a Kubernetes quantity is a string (${EXAMPLES}), got ${text === null ? "null" : typeof text}`,
    );
  }
  const shown = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
  if (!QUANTITY.test(text)) {
    throw new Error(
      `${shown} is not a Kubernetes quantity: write a number with an optional suffix, ${EXAMPLES}`,
    );
  }
  const match = /^([+-]?[0-9.]+)(.*)$/.exec(text) as RegExpExecArray;
  const mantissa = Number(match[1]);
  const suffix = match[2] ?? "";
  let scale: number;
  if (suffix in BINARY) scale = BINARY[suffix] as number;
  else if (suffix in DECIMAL) scale = DECIMAL[suffix] as number;
  else scale = 10 ** Number(suffix.slice(1));
  const value = mantissa * scale;
  if (!Number.isFinite(value)) {
    throw new RangeError(`${shown} is too large a quantity to be a resource size`);
  }
  return value;
}

/**
 * Whether `value` is a string in the Kubernetes quantity grammar (see {@link parseQuantity}).
 *
 * @example
 * ```ts
 * isQuantity("4"); // true
 * isQuantity(4);   // false: a quantity in JSON is a string
 * ```
 */
export function isQuantity(value: unknown): value is string {
  return typeof value === "string" && QUANTITY.test(value);
}
