/**
 * Runaway loops: a driver whose reads do not reflect its writes makes the kit repeat a mutating call
 * on every reconcile (a template version per reconcile, an `updateGroup` per reconcile). The kit
 * detects each kind, stops mutating, sets a named `Ready` reason and records a Warning Event.
 *
 * @module
 */
import type { PhaseResult } from "./phase.js";
import type { PoolScope } from "./scope.js";
import { sectionsOf } from "./sections.js";
import { shortHash, stableStringify } from "./stamp.js";

/** Template versions created for one target without the cloud listing it with its stamp. */
export const MAX_UNCONFIRMED_TEMPLATE_VERSIONS = 2;
/** `updateGroup(settings)` calls for the same settings without `getGroup` reporting them. */
export const MAX_UNCONVERGED_SETTINGS_UPDATES = 3;
/** `updateGroup(bounds)` calls for the same bounds without `getGroup` reporting them. */
export const MAX_UNCONVERGED_BOUNDS_UPDATES = 3;

/**
 * The inputs of a reconcile that a user controls: pool identity, spec, Kubernetes version, failure
 * domains and bootstrap data (hashed), as far as this reconcile has read them. A stopped runaway is
 * released when they change.
 */
export function inputsFingerprint<Spec, Settings>(scope: PoolScope<Spec, Settings>): string {
  const sections = sectionsOf(scope);
  const ctx = sections.peek("spec")?.context;
  const bootstrap = sections.peek("bootstrap");
  return shortHash(
    stableStringify({
      pool: ctx ? { ...ctx.pool, uid: undefined } : scope.key,
      spec: ctx?.spec,
      version: ctx?.version,
      failureDomains: ctx?.failureDomains,
      replicas: ctx?.replicas,
      bootstrap: bootstrap ? shortHash(`${bootstrap.secretRef}\u0000${bootstrap.userData}`) : "",
    }),
  );
}

/**
 * Stops a runaway: remembers it (so later reconciles make no cloud change until the inputs
 * change), records a Warning Event, and returns the result that ends the reconcile.
 *
 * @example
 * ```ts
 * return stopRunaway(scope, PoolReasons.DuplicateProviderIDs, "instances i-1 and i-2 share fake:///a");
 * ```
 */
export function stopRunaway<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  reason: string,
  message: string,
  latch = true,
): PhaseResult {
  const full = `${message}; the kit makes no cloud change to this pool until this is fixed`;
  const known = scope.memory.stopped;
  if (known?.reason !== reason || known.message !== full) {
    scope.events.warning(reason, full);
  }
  if (latch)
    scope.memory.stopped = { reason, message: full, fingerprint: inputsFingerprint(scope) };
  return {
    ready: { status: "False", reason, message: full },
    requeueAfterMs: scope.options.resyncMs,
  };
}

/**
 * A count of unconfirmed cloud changes (`templateCreates`, `settingsUpdates`) if it was recorded
 * since the last release of a stopped runaway, else `undefined`: a released pool starts over.
 *
 * @example
 * ```ts
 * const streak = countedSinceRelease(scope.memory, scope.memory.settingsUpdates);
 * ```
 */
export function countedSinceRelease<Count extends { readonly releases?: number }>(
  memory: { readonly runawayReleases: number },
  count: Count | undefined,
): Count | undefined {
  return count && (count.releases ?? 0) === memory.runawayReleases ? count : undefined;
}

/** The latched runaway, if the inputs are still the ones it was detected with. */
export function latchedRunaway<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
): PhaseResult | undefined {
  const stopped = scope.memory.stopped;
  if (!stopped) return undefined;
  if (stopped.fingerprint !== inputsFingerprint(scope)) {
    // Released: the counts of unconfirmed changes start over with their owners (countedSinceRelease).
    // `lastInputs` needs nothing: its purity check only compares reconciles of the same inputs.
    scope.memory.stopped = undefined;
    scope.memory.runawayReleases += 1;
    return undefined;
  }
  return {
    ready: { status: "False", reason: stopped.reason, message: stopped.message },
    requeueAfterMs: scope.options.resyncMs,
  };
}
