import { pluralize } from "../conditions/pluralize.js";

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * True when `value` is a valid Kubernetes label value: at most 63 characters, empty or alphanumeric at
 * both ends with `-`, `_`, `.` inside (apimachinery `IsValidLabelValue`).
 *
 * @example
 * ```ts
 * isValidLabelValue("pool-1"); // true
 * ```
 */
export function isValidLabelValue(value: string): boolean {
  return Buffer.byteLength(value, "utf8") <= 63 && LABEL_VALUE.test(value);
}

/** FNV-1a, 32 bit, over the UTF-8 bytes (Go `hash/fnv.New32a`). */
function fnv1a32(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * CAPI's `format.MustFormatValue`: returns `value` when it is a valid label value, otherwise
 * `hash_<base64url without padding of FNV-1a-32(value), big-endian>_z`. Use it for the
 * `cluster.x-k8s.io/pool-name` label so that long MachinePool names still match core's selector.
 *
 * @example
 * ```ts
 * formatLabelValue("machineSetName".repeat(12)); // "hash_FR_ghQ_z"
 * formatLabelValue("pool-a"); // "pool-a"
 * ```
 */
export function formatLabelValue(value: string): string {
  if (isValidLabelValue(value)) return value;
  const hash = fnv1a32(Buffer.from(value, "utf8"));
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(hash, 0);
  return `hash_${bytes.toString("base64url")}_z`;
}

/**
 * CAPI's `format.MustEqualValue`: true when a label value equals `formatLabelValue(value)`.
 *
 * @example
 * ```ts
 * labelValueMatches(mp.metadata.name, im.metadata.labels["cluster.x-k8s.io/pool-name"]);
 * ```
 */
export function labelValueMatches(value: string, labelValue: string | undefined): boolean {
  return labelValue === formatLabelValue(value);
}

/**
 * The CRD name core looks up for a kind (CAPI `contract.CalculateCRDName`, R5):
 * `pluralize(lower(kind)) + "." + group`, pluralised like Go's flect.
 *
 * @example
 * ```ts
 * calculateCRDName("infrastructure.foo.com", "FooMachinePool"); // "foomachinepools.infrastructure.foo.com"
 * ```
 */
export function calculateCRDName(group: string, kind: string): string {
  if (!group || !kind) {
    throw new Error(
      `calculateCRDName needs a group and a kind, got group ${JSON.stringify(group)} and kind ${JSON.stringify(kind)}`,
    );
  }
  return `${pluralize(kind.toLowerCase())}.${group}`;
}
