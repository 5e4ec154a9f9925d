/**
 * Scale from zero: what one instance of a pool offers, published on the InfraMachinePool for the
 * cluster-autoscaler. For a node group without Nodes (a MachinePool at 0 replicas) the autoscaler's
 * clusterapi provider builds the Node it would get from the object the MachinePool's
 * `spec.template.spec.infrastructureRef` names — the InfraMachinePool itself — reading
 * `status.capacity` (resource name → quantity) and `status.nodeInfo` (`architecture`,
 * `operatingSystem`); without cpu and memory there it does not scale the group from zero at all.
 *
 * It reads both as maps of strings: one value of another type, and it ignores the whole map. So the
 * check here is stricter than the autoscaler's reader, never looser: strings only, quantities without
 * a sign, cpu and memory present.
 *
 * @module
 */
import { parseQuantity, UNSIGNED_QUANTITY_PATTERN } from "../runtime/quantity.js";

/**
 * CPU architectures a Node reports in `status.nodeInfo.architecture` (Go's `GOARCH` of the kubelet,
 * as the `kubernetes.io/arch` label has it).
 */
export const NODE_ARCHITECTURES = [
  "386",
  "amd64",
  "arm",
  "arm64",
  "loong64",
  "mips",
  "mips64",
  "mips64le",
  "mipsle",
  "ppc64",
  "ppc64le",
  "riscv64",
  "s390x",
] as const;

/** Operating systems a Node reports in `status.nodeInfo.operatingSystem` (the kubelet runs on these). */
export const NODE_OPERATING_SYSTEMS = ["linux", "windows"] as const;

/** One of {@link NODE_ARCHITECTURES}, e.g. `amd64`. */
export type NodeArchitecture = (typeof NODE_ARCHITECTURES)[number];

/** One of {@link NODE_OPERATING_SYSTEMS}. */
export type NodeOperatingSystem = (typeof NODE_OPERATING_SYSTEMS)[number];

/** At most this many resources in `status.capacity` (a real instance type has a handful). */
export const MAX_CAPACITY_RESOURCES = 64;

/** At most this many characters in one capacity quantity. */
export const MAX_CAPACITY_QUANTITY_LENGTH = 64;

/** The resources the cluster-autoscaler needs before it scales a group from zero. */
export const REQUIRED_CAPACITY_RESOURCES = ["cpu", "memory"] as const;

/**
 * The resources one instance offers, by Kubernetes resource name, each a Kubernetes quantity string:
 * `cpu` and `memory` always, then what else the instance type has (`ephemeral-storage`, `pods`,
 * `nvidia.com/gpu`, `hugepages-2Mi`, …), as its Node's `status.capacity` would say.
 */
export interface CapacityResources {
  /** CPUs, e.g. `"4"` or `"3500m"`. */
  readonly cpu: string;
  /** Memory, e.g. `"16Gi"`. */
  readonly memory: string;
  /** Any other resource, e.g. `"ephemeral-storage": "100Gi"`, `pods: "110"`, `"nvidia.com/gpu": "1"`. */
  readonly [resource: string]: string;
}

/** What a Node of the pool reports in `status.nodeInfo`, as far as the autoscaler reads it. */
export interface PoolNodeInfo {
  /** CPU architecture, e.g. `amd64` or `arm64` (the autoscaler's `kubernetes.io/arch` label). */
  readonly architecture?: NodeArchitecture;
  /** `linux` or `windows` (the autoscaler's `kubernetes.io/os` label). */
  readonly operatingSystem?: NodeOperatingSystem;
}

/**
 * What one instance of a pool offers: its resources and, optionally, its architecture and operating
 * system — published as the InfraMachinePool's `status.capacity` and `status.nodeInfo`.
 *
 * @example
 * ```ts
 * const m5Large: PoolCapacity = {
 *   capacity: { cpu: "2", memory: "8Gi", "ephemeral-storage": "20Gi", pods: "29" },
 *   nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
 * };
 * ```
 */
export interface PoolCapacity {
  /** The resources (`status.capacity`). */
  readonly capacity: CapacityResources;
  /** Architecture and operating system (`status.nodeInfo`); leave it out when unknown. */
  readonly nodeInfo?: PoolNodeInfo;
}

/** A capacity that cannot be published: the message says which field and what to write instead. */
export class InvalidCapacityError extends TypeError {
  override readonly name = "InvalidCapacityError";
}

const UNSIGNED_QUANTITY = new RegExp(UNSIGNED_QUANTITY_PATTERN);
const DNS_LABEL = "[a-z0-9](?:[-a-z0-9]*[a-z0-9])?";
// A qualified name, as Kubernetes resource names are: an optional DNS-subdomain prefix and a name.
const RESOURCE_NAME = new RegExp(
  `^(?:${DNS_LABEL}(?:\\.${DNS_LABEL})*/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$`,
);

/** Untrusted text in a message: quoted, at most 40 characters. */
function shown(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

function described(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${shown(value)}`;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return `the ${typeof value} ${String(value).slice(0, 40)}`;
  if (typeof value === "object") {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return typeof name === "string" && name !== "Object" ? `a ${name.slice(0, 40)}` : "an object";
  }
  return typeof value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isResourceName(name: string): boolean {
  const slash = name.indexOf("/");
  const prefix = slash < 0 ? "" : name.slice(0, slash);
  const base = slash < 0 ? name : name.slice(slash + 1);
  return prefix.length <= 253 && base.length <= 63 && RESOURCE_NAME.test(name);
}

function checkQuantity(name: string, quantity: unknown): string {
  const field = `capacity[${shown(name)}]`;
  if (typeof quantity !== "string") {
    const example = typeof quantity === "number" ? `"${String(quantity).slice(0, 20)}"` : '"4"';
    throw new InvalidCapacityError(
      `${field} is ${described(quantity)}; write a quantity string such as ${example}: the cluster-autoscaler reads status.capacity as a map of strings and ignores all of it when one value is not`,
    );
  }
  if (quantity.length > MAX_CAPACITY_QUANTITY_LENGTH) {
    throw new InvalidCapacityError(
      `${field} is ${quantity.length} characters long (${shown(quantity)}); a quantity has at most ${MAX_CAPACITY_QUANTITY_LENGTH}`,
    );
  }
  if (quantity.startsWith("-") || quantity.startsWith("+")) {
    throw new InvalidCapacityError(
      `${field} is ${shown(quantity)}: a capacity has no sign and is never negative; write it like "4" or "16Gi"`,
    );
  }
  if (!UNSIGNED_QUANTITY.test(quantity)) {
    throw new InvalidCapacityError(
      `${field} is ${shown(quantity)}, not a Kubernetes quantity: write a number with an optional suffix, e.g. "4", "500m" or "16Gi"`,
    );
  }
  return quantity;
}

function checkNodeInfo(value: unknown): PoolNodeInfo | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    throw new InvalidCapacityError(
      `nodeInfo is ${described(value)}; it is { architecture?, operatingSystem? } (or left out)`,
    );
  }
  const info: { architecture?: NodeArchitecture; operatingSystem?: NodeOperatingSystem } = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) continue;
    if (key === "architecture") {
      if (!(NODE_ARCHITECTURES as readonly unknown[]).includes(field)) {
        throw new InvalidCapacityError(
          `nodeInfo.architecture is ${described(field)}: use the name a Node reports in status.nodeInfo.architecture (Go's GOARCH: amd64, arm64, …; not x86_64 or aarch64)`,
        );
      }
      info.architecture = field as NodeArchitecture;
    } else if (key === "operatingSystem") {
      if (!(NODE_OPERATING_SYSTEMS as readonly unknown[]).includes(field)) {
        throw new InvalidCapacityError(
          `nodeInfo.operatingSystem is ${described(field)}: use linux or windows, as a Node reports it`,
        );
      }
      info.operatingSystem = field as NodeOperatingSystem;
    } else {
      throw new InvalidCapacityError(
        `nodeInfo has the field ${shown(key)}, which the cluster-autoscaler does not read: nodeInfo takes architecture and operatingSystem`,
      );
    }
  }
  return info.architecture === undefined && info.operatingSystem === undefined ? undefined : info;
}

/**
 * Checks a capacity before it is published and returns it in canonical form (resources sorted by
 * name, an empty `nodeInfo` dropped). Refused with an {@link InvalidCapacityError} that names the
 * field and shows at most 40 characters of the offending value: anything but `{ capacity,
 * nodeInfo? }`; more than {@link MAX_CAPACITY_RESOURCES} resources; a key that is not a resource
 * name; a value that is not a string (`4` instead of `"4"`: the autoscaler would ignore the whole
 * map), not a quantity (`"lots"`), signed (`"-1"`) or longer than
 * {@link MAX_CAPACITY_QUANTITY_LENGTH}; no cpu or memory, or either not above zero (the autoscaler
 * scales from zero only with both); a `nodeInfo` field other than `architecture` (one of
 * {@link NODE_ARCHITECTURES}) and `operatingSystem` (`linux` or `windows`).
 *
 * @throws InvalidCapacityError saying what is wrong and what to write.
 * @example
 * ```ts
 * checkPoolCapacity({ capacity: { memory: "8Gi", cpu: "2" } }); // { capacity: { cpu: "2", memory: "8Gi" } }
 * checkPoolCapacity({ capacity: { cpu: 2, memory: "8Gi" } });  // throws: write a quantity string such as "2"
 * ```
 */
export function checkPoolCapacity(value: unknown): PoolCapacity {
  if (!isRecord(value)) {
    throw new InvalidCapacityError(
      `a pool's capacity is { capacity: { cpu, memory, … }, nodeInfo? }, got ${described(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (key !== "capacity" && key !== "nodeInfo") {
      throw new InvalidCapacityError(
        `a pool's capacity has the field ${shown(key)}; it takes capacity and nodeInfo only`,
      );
    }
  }
  const resources = value.capacity;
  if (!isRecord(resources)) {
    throw new InvalidCapacityError(
      `capacity is ${described(resources)}; it is a map of resource name to quantity, e.g. { cpu: "4", memory: "16Gi" }`,
    );
  }
  const names = Object.keys(resources);
  if (names.length > MAX_CAPACITY_RESOURCES) {
    throw new InvalidCapacityError(
      `capacity lists ${names.length} resources; at most ${MAX_CAPACITY_RESOURCES} are published`,
    );
  }
  const checked: Record<string, string> = {};
  for (const name of names.sort()) {
    if (!isResourceName(name)) {
      throw new InvalidCapacityError(
        `capacity has the resource name ${shown(name)}: use a Kubernetes resource name such as cpu, memory, ephemeral-storage, pods or nvidia.com/gpu`,
      );
    }
    checked[name] = checkQuantity(name, resources[name]);
  }
  for (const required of REQUIRED_CAPACITY_RESOURCES) {
    const quantity = checked[required];
    if (quantity === undefined) {
      throw new InvalidCapacityError(
        `capacity has no ${required}: the cluster-autoscaler scales a pool from zero only when it knows both cpu and memory`,
      );
    }
    if (!(parseQuantity(quantity) > 0)) {
      throw new InvalidCapacityError(
        `capacity[${shown(required)}] is ${shown(quantity)}: an instance offers more than zero ${required}`,
      );
    }
  }
  const nodeInfo = checkNodeInfo(value.nodeInfo);
  return {
    capacity: checked as unknown as CapacityResources,
    ...(nodeInfo ? { nodeInfo } : {}),
  };
}

function sameStrings(a: unknown, b: Readonly<Record<string, string>> | undefined): boolean {
  if (b === undefined) return a === undefined;
  if (!isRecord(a)) return false;
  const keys = Object.keys(b);
  return Object.keys(a).length === keys.length && keys.every((key) => a[key] === b[key]);
}

/**
 * Writes `status.capacity` and `status.nodeInfo` (checked with {@link checkPoolCapacity} first, so
 * a refused capacity changes nothing); `undefined` removes both — a capacity that is no longer known
 * must not stay behind for the autoscaler. Returns whether the object changed.
 *
 * @throws InvalidCapacityError when `capacity` cannot be published.
 * @example
 * ```ts
 * setPoolCapacity(pool, { capacity: { cpu: "2", memory: "8Gi" }, nodeInfo: { architecture: "arm64" } });
 * setPoolCapacity(pool, undefined); // removes both fields
 * ```
 */
export function setPoolCapacity(
  // Any InfraMachinePool (InfraMachinePoolLike fits); a leaf, so the CRD layer's types stay small.
  objInput: { status?: object },
  capacity: PoolCapacity | undefined,
): boolean {
  const obj = objInput as { status?: Record<string, unknown> };
  const checked = capacity === undefined ? undefined : checkPoolCapacity(capacity);
  const status = obj.status ?? {};
  if (
    sameStrings(status.capacity, checked?.capacity) &&
    sameStrings(status.nodeInfo, checked?.nodeInfo as Record<string, string> | undefined)
  ) {
    return false;
  }
  const next: Record<string, unknown> = { ...status };
  delete next.capacity;
  delete next.nodeInfo;
  if (checked) {
    next.capacity = { ...checked.capacity };
    if (checked.nodeInfo) next.nodeInfo = { ...checked.nodeInfo };
  }
  obj.status = next;
  return true;
}
