/**
 * The preflight checks core's MachineSet runs before it creates a Machine, for a MachinePool: the
 * control plane is stable (neither provisioning nor upgrading), and the pool's Kubernetes version
 * keeps the kubelet and kubeadm skew policies against the control plane's. Pure: the caller reads the
 * Cluster, its control plane object and the skip annotation.
 *
 * @module
 */

/** The names of the checks, as core spells them (and as the skip annotation lists them). */
export const PreflightChecks = {
  /** Skips every check (only in the skip annotation). */
  All: "All",
  /** The control plane is neither provisioning nor upgrading (nor, with a topology, about to). */
  ControlPlaneIsStable: "ControlPlaneIsStable",
  /** The pool's minor version is not above the control plane's, nor more than 3 below it. */
  KubernetesVersionSkew: "KubernetesVersionSkew",
  /** With the kubeadm bootstrap provider: the pool's minor version equals the control plane's. */
  KubeadmVersionSkew: "KubeadmVersionSkew",
  /** With a managed topology: the pool's version equals the control plane's. */
  ControlPlaneVersionSkew: "ControlPlaneVersionSkew",
} as const;

/** One of the {@link PreflightChecks}. */
export type PreflightCheck = (typeof PreflightChecks)[keyof typeof PreflightChecks];

/**
 * The annotation that skips checks: a comma-separated list of {@link PreflightChecks} names, or
 * `All`. The kit reads it from the MachinePool, else from the InfraMachinePool (as core reads the
 * MachineSet's, else its bootstrap config template's).
 */
export const SKIP_PREFLIGHT_CHECKS_ANNOTATION = "machineset.cluster.x-k8s.io/skip-preflight-checks";

/** The kubelet may be this many minor versions older than the control plane (Kubernetes ≥ 1.28). */
const KUBELET_MINOR_SKEW = 3;

/** The topology controller's annotation naming the version of an upgrade in progress. */
const UPGRADE_STEP_ANNOTATION = "topology.internal.cluster.x-k8s.io/upgrade-step";

/** A failed check: which one, and why, in core's words. */
export interface PreflightFailure {
  /** The check's name. */
  readonly check: PreflightCheck;
  /** Why it failed (bounded). */
  readonly message: string;
}

/** What {@link evaluatePreflight} looks at. */
export interface PreflightInput {
  /** The control plane object the Cluster's `spec.controlPlaneRef` names. */
  readonly controlPlane: {
    readonly kind?: string;
    readonly metadata?: { readonly namespace?: string; readonly name?: string };
    readonly spec?: unknown;
    readonly status?: unknown;
  };
  /** The Cluster (its `spec.topology.version` and upgrade-step annotation). */
  readonly cluster:
    | {
        readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
        readonly spec?: unknown;
      }
    | undefined;
  /** `MachinePool.spec.template.spec.version`, if set. */
  readonly poolVersion: string | undefined;
  /** The MachinePool's bootstrap `configRef`, if any (the kubeadm check needs one). */
  readonly bootstrapConfigRef: { readonly apiGroup?: string; readonly kind?: string } | undefined;
  /** The checks to skip (parsed from the annotation by {@link skippedPreflightChecks}). */
  readonly skipped: ReadonlySet<string>;
}

/** A Kubernetes version, parsed leniently as core's `semver.ParseTolerant` does. */
export interface KubernetesVersion {
  /** Major version. */
  readonly major: number;
  /** Minor version. */
  readonly minor: number;
  /** Patch version (0 when the text has none). */
  readonly patch: number;
  /** Pre-release (`rc.0`), empty for a release. */
  readonly pre: string;
  /** Build metadata (after `+`), empty without. */
  readonly build: string;
  /** The text it was parsed from. */
  readonly text: string;
}

const VERSION =
  /^v?(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?(?:-([0-9A-Za-z.-]{1,64}))?(?:\+([0-9A-Za-z.-]{1,64}))?$/;

/** Parses `v1.34.1`, `1.34`, `v1.34.1-rc.0+build`; `undefined` for anything else. */
export function parseKubernetesVersion(text: string): KubernetesVersion | undefined {
  const match = VERSION.exec(text.trim());
  if (!match) return undefined;
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3] ?? 0),
    pre: match[4] ?? "",
    build: match[5] ?? "",
    text,
  };
}

/**
 * `a` against `b`: > 0 when `a` is newer. A pre-release sorts below its release; two versions that
 * differ only in build metadata compare as newer, as core's upgrade check counts a rebuilt version
 * as an upgrade.
 */
function compareVersions(a: KubernetesVersion, b: KubernetesVersion): number {
  for (const key of ["major", "minor", "patch"] as const) {
    if (a[key] !== b[key]) return a[key] - b[key];
  }
  if (a.pre !== b.pre) {
    if (a.pre === "") return 1;
    if (b.pre === "") return -1;
    return a.pre < b.pre ? -1 : 1;
  }
  return a.build === b.build ? 0 : 1;
}

function field(obj: unknown, ...path: string[]): unknown {
  let at = obj;
  for (const key of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The checks an annotation value skips: names split on commas, trimmed (at most 16 kept). */
export function skippedPreflightChecks(annotation: string | undefined): Set<string> {
  if (!annotation) return new Set();
  return new Set(
    annotation
      .split(",", 16)
      .map((name) => name.trim().slice(0, 64))
      .filter((name) => name !== ""),
  );
}

/**
 * The checks that fail, in core's order: none when the control plane reports no `spec.version` (core
 * cannot check a control plane without one either), and the skew checks only when the pool has a
 * version. The control plane's version is `spec.version`, what it is (or will be) running; it is
 * provisioning while it reports no `status.version` (nor `status.versions`), upgrading while
 * `spec.version` is newer than the oldest version it reports.
 *
 * @example
 * ```ts
 * evaluatePreflight({ controlPlane: { kind: "KubeadmControlPlane", metadata: { name: "cp" },
 *   spec: { version: "v1.34.1" }, status: { version: "v1.33.4" } },
 *   cluster: undefined, poolVersion: "v1.33.4", bootstrapConfigRef: undefined, skipped: new Set() });
 * // [{ check: "ControlPlaneIsStable", message: "KubeadmControlPlane cp is upgrading …" }]
 * ```
 */
export function evaluatePreflight(input: PreflightInput): PreflightFailure[] {
  const { controlPlane, skipped } = input;
  if (skipped.has(PreflightChecks.All)) return [];
  const specVersion = text(field(controlPlane.spec, "version"));
  if (!specVersion) return [];
  const name = `${controlPlane.kind ?? "ControlPlane"} ${controlPlane.metadata?.namespace ? `${controlPlane.metadata.namespace}/` : ""}${controlPlane.metadata?.name ?? ""}`;
  const failures: PreflightFailure[] = [];
  const fail = (check: PreflightCheck, message: string) =>
    failures.push({ check, message: `${message} ("${check}" preflight check failed)` });
  const cp = parseKubernetesVersion(specVersion);
  if (!cp) {
    fail(
      PreflightChecks.ControlPlaneIsStable,
      `${name} reports spec.version ${JSON.stringify(specVersion.slice(0, 64))}, which is not a version`,
    );
    return failures;
  }
  const run = (check: PreflightCheck) => !skipped.has(check);
  const topologyVersion = text(field(input.cluster?.spec, "topology", "version"));
  if (run(PreflightChecks.ControlPlaneIsStable)) {
    const step = input.cluster?.metadata?.annotations?.[UPGRADE_STEP_ANNOTATION];
    const reported = field(controlPlane.status, "versions");
    const versions = Array.isArray(reported)
      ? reported
          .map((entry) => text(field(entry, "version")))
          .filter((v): v is string => v !== undefined && v !== "")
      : [];
    const statusVersion = versions[0] ?? text(field(controlPlane.status, "version"));
    if (topologyVersion && topologyVersion !== specVersion && step !== specVersion) {
      fail(
        PreflightChecks.ControlPlaneIsStable,
        `${name} has a pending version upgrade to ${(step || topologyVersion).slice(0, 64)}`,
      );
    } else if (!statusVersion) {
      fail(PreflightChecks.ControlPlaneIsStable, `${name} is provisioning`);
    } else {
      const upgrading = (versions.length > 0 ? versions : [statusVersion]).some((v) => {
        const current = parseKubernetesVersion(v);
        return current === undefined || compareVersions(cp, current) > 0;
      });
      if (upgrading) fail(PreflightChecks.ControlPlaneIsStable, `${name} is upgrading`);
    }
  }
  const poolText = input.poolVersion;
  if (!poolText) return failures;
  const pool = parseKubernetesVersion(poolText);
  if (!pool) {
    fail(
      PreflightChecks.KubernetesVersionSkew,
      `MachinePool version ${JSON.stringify(poolText.slice(0, 64))} is not a version`,
    );
    return failures;
  }
  const versions = `MachinePool version (${poolText.slice(0, 64)}) and ControlPlane version (${specVersion.slice(0, 64)})`;
  if (run(PreflightChecks.KubernetesVersionSkew)) {
    if (pool.minor > cp.minor) {
      fail(
        PreflightChecks.KubernetesVersionSkew,
        `${versions} do not conform to the kubernetes version skew policy as the MachinePool version is higher than the ControlPlane version`,
      );
    } else if (pool.minor < cp.minor - KUBELET_MINOR_SKEW) {
      fail(
        PreflightChecks.KubernetesVersionSkew,
        `${versions} do not conform to the kubernetes version skew policy as the MachinePool version is more than ${KUBELET_MINOR_SKEW} minor versions older than the ControlPlane version`,
      );
    }
  }
  const ref = input.bootstrapConfigRef;
  // A MachinePool names its KubeadmConfig itself (a MachineSet names a KubeadmConfigTemplate).
  const kubeadm =
    ref?.apiGroup === "bootstrap.cluster.x-k8s.io" &&
    (ref.kind === "KubeadmConfig" || ref.kind === "KubeadmConfigTemplate");
  if (run(PreflightChecks.KubeadmVersionSkew) && kubeadm && pool.minor !== cp.minor) {
    fail(
      PreflightChecks.KubeadmVersionSkew,
      `${versions} do not conform to kubeadm version skew policy as kubeadm only supports joining with the same major+minor version as the control plane`,
    );
  }
  if (run(PreflightChecks.ControlPlaneVersionSkew) && topologyVersion && poolText !== specVersion) {
    fail(
      PreflightChecks.ControlPlaneVersionSkew,
      `MachinePool version (${poolText.slice(0, 64)}) is not yet the same as the ControlPlane version (${specVersion.slice(0, 64)}), waiting for version to be propagated to the MachinePool`,
    );
  }
  return failures;
}
