import { Annotations, Labels } from "@capi-ts/sdk";

/** The MachinePool fields core's defaulting webhook reads and writes. */
export interface DefaultableMachinePool {
  /** Metadata. */
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  /** Spec. */
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

function parseSize(value: string, annotation: string): number {
  if (!/^[+-]?\d+$/.test(value.trim())) {
    throw new Error(
      `failed to caculate MachinePool replicas value: could not parse the value of the "${annotation}" annotation: ${JSON.stringify(value)} is not an integer`,
    );
  }
  return Number(value.trim());
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
