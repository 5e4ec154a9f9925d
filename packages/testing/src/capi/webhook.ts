import { Annotations, Labels } from "@capi-ts/sdk/contract";

/** The MachinePool fields core's defaulting webhook reads and writes. */
export interface DefaultableMachinePool {
  /** Labels and annotations: defaulting adds the cluster-name label (from `spec.clusterName`). */
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  /**
   * The fields defaulting reads and fills: `replicas` (from the autoscaler annotations, else 1), the
   * template's node deletion timeout and the `v` prefix of its `version`.
   */
  spec?: {
    clusterName?: string;
    replicas?: number;
    template?: {
      spec?: {
        version?: string;
        deletion?: { nodeDeletionTimeoutSeconds?: number };
      };
    };
  };
}

/** The webhook's default for `spec.template.spec.deletion.nodeDeletionTimeoutSeconds`. */
export const DEFAULT_NODE_DELETION_TIMEOUT_SECONDS = 10;

/** Go `strconv.ParseInt(value, 10, 32)`: an optional sign and ASCII digits, nothing else, in int32. */
function parseSize(value: string, annotation: string): number {
  const fail = (why: string) =>
    new Error(
      `failed to caculate MachinePool replicas value: could not parse the value of the "${annotation}" annotation: strconv.ParseInt: parsing ${JSON.stringify(value)}: ${why}`,
    );
  if (!/^[+-]?[0-9]+$/.test(value)) throw fail("invalid syntax");
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed > 2_147_483_647 || parsed < -2_147_483_648)
    throw fail("value out of range");
  return parsed;
}

/**
 * Applies what core's MachinePool defaulting webhook does (`core/webhooks/admission/machinepool.go`
 * `Default`), in place, and returns the same object: the `cluster.x-k8s.io/cluster-name` label;
 * `spec.replicas` when unset — from the autoscaler min/max-size annotations (a new pool takes the
 * minimum; an existing one keeps its old value clamped into [min, max]) or else 1; the 10 s
 * `nodeDeletionTimeoutSeconds`; a `v` prefix on `spec.template.spec.version`. Pass `old` (the stored
 * object) for an update. Throws the webhook's error for an unparsable size annotation.
 *
 * @example
 * ```ts
 * const mp = defaultMachinePool({ metadata: { annotations: {
 *   "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "2",
 *   "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5" } },
 *   spec: { clusterName: "c1", template: { spec: {} } } });
 * mp.spec?.replicas; // 2
 * ```
 */
export function defaultMachinePool<T extends DefaultableMachinePool>(
  mp: T,
  old?: DefaultableMachinePool,
): T {
  mp.metadata ??= {};
  mp.spec ??= {};
  mp.metadata.labels = { ...mp.metadata.labels, [Labels.ClusterName]: mp.spec.clusterName ?? "" };
  mp.spec.replicas = defaultReplicas(mp, old);
  mp.spec.template ??= {};
  mp.spec.template.spec ??= {};
  const templateSpec = mp.spec.template.spec;
  templateSpec.deletion ??= {};
  templateSpec.deletion.nodeDeletionTimeoutSeconds ??= DEFAULT_NODE_DELETION_TIMEOUT_SECONDS;
  if (templateSpec.version && !templateSpec.version.startsWith("v")) {
    templateSpec.version = `v${templateSpec.version}`;
  }
  return mp;
}

function defaultReplicas(
  mp: DefaultableMachinePool,
  old: DefaultableMachinePool | undefined,
): number {
  const current = mp.spec?.replicas;
  if (current !== undefined && current !== null) return current;
  const annotations = mp.metadata?.annotations ?? {};
  const minText = annotations[Annotations.AutoscalerMinSize];
  const maxText = annotations[Annotations.AutoscalerMaxSize];
  if (minText === undefined || maxText === undefined) return 1;
  const min = parseSize(minText, Annotations.AutoscalerMinSize);
  const max = parseSize(maxText, Annotations.AutoscalerMaxSize);
  if (!old) return min;
  const previous = old.spec?.replicas;
  if (previous === undefined || previous === null || previous < min) return min;
  if (previous > max) return max;
  return previous;
}

/** The MachinePool fields core's validating webhook checks. */
export interface ValidatableMachinePool {
  /** Metadata (the name goes into the error). */
  metadata?: { name?: string };
  /**
   * The fields validation checks: the cluster name on the pool and its template, the template's
   * label and annotation keys, bootstrap (a config ref or a data Secret name), version and taints.
   */
  spec?: {
    clusterName?: string;
    template?: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: {
        clusterName?: string;
        version?: string;
        bootstrap?: {
          configRef?: { apiGroup?: string; kind?: string; name?: string };
          dataSecretName?: string;
        };
        taints?: unknown[];
      };
    };
  };
}

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2)
    return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  const name = parts[parts.length - 1] as string;
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix.length === 0) return "prefix part must be non-empty";
    if (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))
      return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  if (name.length === 0) return "name part must be non-empty";
  if (name.length > 63) return "name part must be no more than 63 bytes";
  if (!QUALIFIED_NAME.test(name))
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  return undefined;
}

/**
 * What core's MachinePool validating webhook (`core/webhooks/admission/machinepool.go` `validate`)
 * answers for a create (no `old`) or an update: `undefined` when it admits the pool, else the error the
 * API server returns (`admission webhook "validation.machinepool.cluster.x-k8s.io" denied the request:
 * MachinePool.cluster.x-k8s.io "<name>" is invalid: …`). Rules: a bootstrap `configRef` or
 * `dataSecretName`; `spec.clusterName` immutable and equal to `spec.template.spec.clusterName`; a
 * version that starts with `v` and is strict semver; no taints; valid template labels and annotation
 * keys.
 *
 * @example
 * ```ts
 * validateMachinePool({ metadata: { name: "mp" }, spec: { clusterName: "c1",
 *   template: { spec: { clusterName: "c1", bootstrap: {} } } } })?.message;
 * // admission webhook "validation.machinepool.cluster.x-k8s.io" denied the request:
 * // MachinePool.cluster.x-k8s.io "mp" is invalid: spec.template.spec.bootstrap: Required value: …
 * ```
 */
export function validateMachinePool(
  mp: ValidatableMachinePool,
  old?: ValidatableMachinePool,
): Error | undefined {
  const errors: string[] = [];
  const spec = mp.spec ?? {};
  const templateSpec = spec.template?.spec ?? {};
  const bootstrap = templateSpec.bootstrap ?? {};
  const configRefDefined = !!bootstrap.configRef?.kind && !!bootstrap.configRef?.name;
  if (
    !configRefDefined &&
    (bootstrap.dataSecretName === undefined || bootstrap.dataSecretName === null)
  ) {
    errors.push(
      "spec.template.spec.bootstrap: Required value: expected either spec.template.spec.bootstrap.dataSecretName or spec.template.spec.bootstrap.configRef to be populated",
    );
  }
  if (old && (old.spec?.clusterName ?? "") !== (spec.clusterName ?? "")) {
    errors.push("spec.clusterName: Forbidden: field is immutable");
  }
  if ((spec.clusterName ?? "") !== (templateSpec.clusterName ?? "")) {
    errors.push(
      `spec.clusterName: Invalid value: ${JSON.stringify(spec.clusterName ?? "")}: spec.clusterName and spec.template.spec.clusterName must be set to the same value`,
    );
  }
  const version = templateSpec.version ?? "";
  if (version !== "") {
    if (!version.startsWith("v")) {
      errors.push(
        `spec.template.spec.version: Invalid value: ${JSON.stringify(version)}: must start with v`,
      );
    }
    if (!SEMVER.test(version.startsWith("v") ? version.slice(1) : version)) {
      errors.push(
        `spec.template.spec.version: Invalid value: ${JSON.stringify(version)}: must be a valid semantic version`,
      );
    }
  }
  if ((templateSpec.taints ?? []).length > 0) {
    errors.push("spec.taints: Forbidden: taints feature for MachinePools is not yet implemented");
    errors.push(
      "spec.taints: Forbidden: taints are not allowed to be set when the feature gate MachineTaintPropagation is disabled",
    );
  }
  const metadata = spec.template?.metadata ?? {};
  for (const [key, value] of Object.entries(metadata.labels ?? {})) {
    const problem = qualifiedNameProblem(key);
    if (problem)
      errors.push(
        `spec.template.metadata.labels: Invalid value: ${JSON.stringify(key)}: ${problem}`,
      );
    if (value.length > 63 || (value !== "" && !QUALIFIED_NAME.test(value))) {
      errors.push(
        `spec.template.metadata.labels: Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
    }
  }
  for (const key of Object.keys(metadata.annotations ?? {})) {
    const problem = qualifiedNameProblem(key.toLowerCase());
    if (problem)
      errors.push(
        `spec.template.metadata.annotations: Invalid value: ${JSON.stringify(key)}: ${problem}`,
      );
  }
  if (errors.length === 0) return undefined;
  const detail = errors.length === 1 ? errors[0] : `[${errors.join(", ")}]`;
  return new Error(
    `admission webhook "validation.machinepool.cluster.x-k8s.io" denied the request: MachinePool.cluster.x-k8s.io ${JSON.stringify(mp.metadata?.name ?? "")} is invalid: ${detail}`,
  );
}
