/**
 * The preflight checks before the kit launches instances (a new group, a scale-up, a surge, a
 * replacement): core's MachineSet checks ({@link evaluatePreflight}) on the Cluster's control plane,
 * skipped by the `machineset.cluster.x-k8s.io/skip-preflight-checks` annotation of the MachinePool
 * (else of the InfraMachinePool). A failed check holds the launch, as a wait: `Ready` is False with
 * reason `PreflightCheckFailed` and the check's name, and the pool is looked at again after the poll
 * interval. Removals are never held.
 *
 * @module
 */
import {
  evaluatePreflight,
  type PreflightFailure,
  SKIP_PREFLIGHT_CHECKS_ANNOTATION,
  skippedPreflightChecks,
} from "../../contract/preflight.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope, ReadyState } from "../scope.js";

/** What holds a launch: the checks that failed and the `Ready` condition that says so. */
export interface PreflightHold {
  /** The failed checks (one entry naming the control plane when it cannot be read). */
  readonly failures: readonly PreflightFailure[];
  /** `Ready`: False, `PreflightCheckFailed`, core's wording with the checks' names. */
  readonly ready: ReadyState;
}

/** Longest message the hold carries (several checks, each naming objects). */
const MAX_MESSAGE = 1024;

function bounded(message: string): string {
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
}

/**
 * Runs the preflight checks for `action` (`"Scale up"`, `"Rollout"`…); `undefined` when the launch
 * may go ahead: every check passes or is skipped, the Cluster has no control plane reference, or the
 * kit cannot read control planes (`scope.api.readControlPlane` absent).
 */
export async function preflightHold<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  action: string,
): Promise<PreflightHold | undefined> {
  const read = scope.api.readControlPlane;
  const cluster = scope.cluster;
  const ref = cluster?.spec?.controlPlaneRef;
  if (!read || !cluster || !ref?.kind || !ref.name) return undefined;
  const annotation =
    scope.machinePool?.metadata?.annotations?.[SKIP_PREFLIGHT_CHECKS_ANNOTATION] ??
    scope.pool.metadata?.annotations?.[SKIP_PREFLIGHT_CHECKS_ANNOTATION];
  const skipped = skippedPreflightChecks(annotation);
  if (skipped.has("All")) return undefined;
  const namespace = cluster.metadata?.namespace ?? scope.key.namespace;
  const what = `${ref.kind} ${namespace}/${ref.name}`;
  let failures: PreflightFailure[];
  try {
    const controlPlane = await read(
      { apiGroup: ref.apiGroup ?? "", kind: ref.kind, name: ref.name },
      namespace,
    );
    failures = controlPlane
      ? evaluatePreflight({
          controlPlane,
          cluster,
          poolVersion: scope.machinePool?.spec?.template?.spec?.version,
          bootstrapConfigRef: scope.machinePool?.spec?.template?.spec?.bootstrap?.configRef,
          skipped,
        })
      : [{ check: "ControlPlaneIsStable", message: `${what} does not exist` }];
  } catch (error) {
    // Core cannot check a control plane it cannot read either; it holds the Machine and retries.
    const reason = error instanceof Error ? error.message : String(error);
    failures = [
      { check: "ControlPlaneIsStable", message: `cannot read ${what}: ${reason.slice(0, 200)}` },
    ];
  }
  if (failures.length === 0) return undefined;
  const message = bounded(
    `${action} on hold because ${failures.map((f) => f.message).join("; ")}. The operation will continue after the preflight check(s) pass (skip one with the ${SKIP_PREFLIGHT_CHECKS_ANNOTATION} annotation)`,
  );
  return {
    failures,
    ready: { status: "False", reason: PoolReasons.PreflightCheckFailed, message },
  };
}
