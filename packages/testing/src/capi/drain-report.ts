/**
 * The bookkeeping of one drain of a Machine's Node (core's `EvictionResult`) and the words core's
 * Machine controller puts it in: the DrainingSucceeded and Deleting messages, and the likely causes
 * its Ready condition names when a drain takes long.
 *
 * @module
 */
import type { V1Pod } from "@kubernetes/client-node";

/** What one pass of a drain left on the Node. */
export interface EvictionResult {
  /** Pods evicted or already terminating, not gone yet. */
  deletionTimestampSet: V1Pod[];
  /** Pods whose eviction failed, by the error's text. */
  failed: Map<string, V1Pod[]>;
  /** Pods labelled to be waited for until they complete. */
  waitCompleted: V1Pod[];
}

/** `namespace/name` of a Pod. */
export function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
}

/** `clog.ListToString` of Pods: the first `n`, then `... (k more)`. */
function podList(pods: V1Pod[], n: number): string {
  const names = pods.slice(0, n).map(podKey);
  if (pods.length > n) names.push(`... (${pods.length - n} more)`);
  return names.join(", ");
}

/** Nothing left to wait for. */
export function drainCompleted(r: EvictionResult): boolean {
  return r.deletionTimestampSet.length === 0 && r.failed.size === 0 && r.waitCompleted.length === 0;
}

/** `EvictionResult.ConditionMessage` (without the MachineDrainRule ordering, not ported). */
export function drainConditionMessage(r: EvictionResult, startedAt: string): string {
  let message = `Drain not completed yet (started at ${startedAt}):`;
  const kind = (pods: V1Pod[]) => (pods.length > 1 ? "Pods" : "Pod");
  if (r.deletionTimestampSet.length > 0) {
    message += `\n* ${kind(r.deletionTimestampSet)} ${podList(r.deletionTimestampSet, 3)}: deletionTimestamp set, but still not removed from the Node`;
  }
  const failures = [...r.failed.keys()].sort();
  for (const failure of failures.slice(0, 5)) {
    const pods = r.failed.get(failure) ?? [];
    let text = failure.replaceAll(
      "Cannot evict pod as it would violate the pod's disruption budget.",
      "cannot evict pod as it would violate the pod's disruption budget.",
    );
    if (!text.startsWith("cannot evict pod as it would violate the pod's disruption budget."))
      text = `failed to evict Pod, ${text}`;
    message += `\n* ${kind(pods)} ${podList(pods, 3)}: ${text}`;
  }
  const skipped = failures.slice(5).reduce((n, f) => n + (r.failed.get(f)?.length ?? 0), 0);
  if (skipped === 1) message += "\n* 1 Pod with other issues";
  else if (skipped > 1) message += `\n* ${skipped} Pods with other issues`;
  if (r.waitCompleted.length > 0) {
    message += `\n* ${kind(r.waitCompleted)} ${podList(r.waitCompleted, 3)}: waiting for completion`;
  }
  return message;
}

/** What a drain's condition message says holds it up, in the words of the Machine's Ready condition. */
export function drainDelays(message: string): string[] {
  const delays: string[] = [];
  if (message.includes("cannot evict pod as it would violate the pod's disruption budget."))
    delays.push("PodDisruptionBudgets");
  if (message.includes("deletionTimestamp set, but still not removed from the Node"))
    delays.push("Pods not terminating");
  if (message.includes("failed to evict Pod")) delays.push("Pod eviction errors");
  if (message.includes("waiting for completion")) delays.push("Pods not completed yet");
  return delays;
}
