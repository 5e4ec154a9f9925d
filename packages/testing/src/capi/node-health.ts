/**
 * What a workload cluster Node's conditions say, as core's Machine and MachinePool controllers read
 * them: ready, available, unreachable, and the summaries behind the Machine's NodeHealthy conditions.
 *
 * @module
 */
import type { ConditionStatus } from "@capi-ts/sdk/conditions";
import type { V1Node } from "@kubernetes/client-node";

/** A Node's condition of this type. */
export function nodeCondition(node: V1Node, type: string) {
  return node.status?.conditions?.find((c) => c.type === type);
}

/** `noderefutil.IsNodeUnreachable`: the Node's Ready condition is Unknown. */
export function isNodeUnreachable(node: V1Node): boolean {
  return nodeCondition(node, "Ready")?.status === "Unknown";
}

/** `noderefutil.IsNodeReady`. */
export function isNodeReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** `noderefutil.IsNodeAvailable`: ready for longer than `minReadySeconds`. */
export function isNodeAvailable(node: V1Node, minReadySeconds: number, now: number): boolean {
  if (!isNodeReady(node)) return false;
  if (minReadySeconds === 0) return true;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : 0;
  return since > 0 && since + minReadySeconds * 1000 < now;
}

/** `summarizeNodeV1beta1Conditions` (the deprecated NodeHealthy condition). */
export function summarizeNodeV1Beta1(node: V1Node): { status: ConditionStatus; message: string } {
  let falseCount = 0;
  let unknownCount = 0;
  let message = "";
  for (const c of node.status?.conditions ?? []) {
    const pressure = ["MemoryPressure", "DiskPressure", "PIDPressure"].includes(c.type);
    const bad = pressure ? c.status !== "False" : c.type === "Ready" && c.status !== "True";
    if (!bad) continue;
    message += `Node condition ${c.type} is ${c.status}. `;
    if (c.status === "Unknown") unknownCount++;
    else falseCount++;
  }
  message = message.endsWith(". ") ? message.slice(0, -2) : message;
  if (falseCount > 0) return { status: "False", message };
  if (falseCount + unknownCount < 4) return { status: "True", message };
  return { status: "Unknown", message };
}

/** `summarizeNodeConditions` (the v1beta2 NodeHealthy condition). */
export function summarizeNode(node: V1Node): {
  status: ConditionStatus;
  reason: string;
  message: string;
} {
  let falseCount = 0;
  let unknownCount = 0;
  let count = 0;
  const distinct = new Set<string>();
  let messages: string[] = [];
  for (const type of ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]) {
    const condition = [...(node.status?.conditions ?? [])].reverse().find((c) => c.type === type);
    if (!condition) {
      messages.push(`* Node.${type}: Condition not yet reported`);
      unknownCount++;
      continue;
    }
    const bad = type === "Ready" ? condition.status !== "True" : condition.status !== "False";
    if (!bad) continue;
    const m = condition.message || `Condition is ${condition.status}`;
    count++;
    distinct.add(m);
    messages.push(`* Node.${type}: ${m}`);
    if (condition.status === "Unknown") unknownCount++;
    else falseCount++;
  }
  if (count > 1 && distinct.size === 1) messages = [`* Node.AllConditions: ${[...distinct][0]}`];
  const message = messages.join("\n");
  if (falseCount > 0) return { status: "False", reason: "NodeNotHealthy", message };
  if (unknownCount > 0) return { status: "Unknown", reason: "NodeHealthyUnknown", message };
  return { status: "True", reason: "NodeHealthy", message: "" };
}
