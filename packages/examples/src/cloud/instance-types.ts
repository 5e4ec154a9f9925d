/**
 * The fake cloud's instance types: what each size offers, as a cloud's instance type catalog tells
 * it (EC2 `DescribeInstanceTypes`, Azure resource SKUs, GCE machine types). A real catalog is an API;
 * this one is published data, so reading it is no cloud call and leaves the call log — which tests
 * count — to the groups and templates. Any other `instanceType` still launches (the fake cloud
 * accepts any name); it just has no known size.
 *
 * @module
 */

/** One instance type of the fake cloud. */
export interface FakeInstanceType {
  /** The name a pool's `spec.instanceType` uses, e.g. `small`. */
  readonly name: string;
  /** Virtual CPUs. */
  readonly vcpus: number;
  /** Memory, MiB. */
  readonly memoryMiB: number;
  /** Local disk for the kubelet's ephemeral storage, GiB. */
  readonly diskGiB: number;
  /** Pods the image's kubelet is configured for (`--max-pods`). */
  readonly maxPods: number;
  /** CPU architecture, as Go (and so a Node) names it. */
  readonly architecture: "amd64" | "arm64";
  /** NVIDIA GPUs, if the type has any. */
  readonly gpus?: number;
}

/** Every instance type of the fake cloud, smallest first. */
export const FAKE_INSTANCE_TYPES: readonly FakeInstanceType[] = [
  { name: "small", vcpus: 2, memoryMiB: 4096, diskGiB: 20, maxPods: 110, architecture: "amd64" },
  { name: "medium", vcpus: 4, memoryMiB: 16384, diskGiB: 50, maxPods: 110, architecture: "amd64" },
  { name: "large", vcpus: 8, memoryMiB: 32768, diskGiB: 100, maxPods: 110, architecture: "amd64" },
  {
    name: "xlarge",
    vcpus: 16,
    memoryMiB: 65536,
    diskGiB: 200,
    maxPods: 250,
    architecture: "amd64",
  },
  {
    name: "arm-medium",
    vcpus: 4,
    memoryMiB: 16384,
    diskGiB: 50,
    maxPods: 110,
    architecture: "arm64",
  },
  {
    name: "gpu-large",
    vcpus: 8,
    memoryMiB: 62464,
    diskGiB: 100,
    maxPods: 110,
    architecture: "amd64",
    gpus: 1,
  },
];

/**
 * The instance type named `name`, or `undefined` when the fake cloud has no such type.
 *
 * @example
 * ```ts
 * fakeInstanceType("medium")?.vcpus; // 4
 * ```
 */
export function fakeInstanceType(name: string): FakeInstanceType | undefined {
  return FAKE_INSTANCE_TYPES.find((type) => type.name === name);
}
