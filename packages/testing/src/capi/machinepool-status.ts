/**
 * The end of each reconcile of core's emulated MachinePool controller: replicas and versions in the
 * pool's status (from its Nodes, or from its Machines' conditions), the phase, and the deprecated
 * v1beta1 Ready summary.
 *
 * @module
 */
import { replicasManagedByExternalAutoscaler } from "@capi-ts/sdk/contract";
import type { V1Node } from "@kubernetes/client-node";
import type { MachinePoolScope } from "./machinepool-scope.js";
import {
  type DeprecatedCondition,
  isDeleting,
  type MachineObject,
  type MachinePoolObject,
} from "./types.js";
import { setV1Beta1Ready, summarizeV1Beta1 } from "./v1beta1-summary.js";

const READY_V1BETA1_TYPES = ["BootstrapReady", "InfrastructureReady", "ReplicasReady"];

/** The conditions core's MachinePool controller owns in its patch of the pool. */
export const OWNED_CONDITIONS = ["Paused", "Ready", ...READY_V1BETA1_TYPES];

/**
 * Deprecated v1beta1 `SetSummary(Ready ← BootstrapReady, InfrastructureReady, ReplicasReady)` with the
 * default merge strategy; the message is the deciding condition's.
 */
export function setV1Beta1Summary(mp: MachinePoolObject): void {
  const all = (mp.status?.deprecated?.v1beta1?.conditions ?? []) as DeprecatedCondition[];
  const summary = summarizeV1Beta1(all, READY_V1BETA1_TYPES);
  if (summary) setV1Beta1Ready(mp, summary, summary.first.message ?? "");
}

/** Go `semver.ParseTolerant` enough for Kubernetes versions: `v` prefix, missing minor/patch. */
function parseTolerant(version: string): number[] | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(version.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

/**
 * `statusVersions`: replicas per version (a replica without a version is left out), in semver order,
 * then text, then first-seen order; unparsable versions last.
 */
function statusVersions(
  versions: (string | undefined)[],
): { version: string; replicas: number }[] | undefined {
  const counts: { version: string; replicas: number; order: number }[] = [];
  for (const version of versions) {
    if (!version) continue;
    const existing = counts.find((entry) => entry.version === version);
    if (existing) existing.replicas++;
    else counts.push({ version, replicas: 1, order: counts.length });
  }
  if (counts.length === 0) return undefined;
  const less = (a: (typeof counts)[number], b: (typeof counts)[number]): number => {
    const pa = parseTolerant(a.version);
    const pb = parseTolerant(b.version);
    if (pa && pb) {
      for (let i = 0; i < 3; i++) {
        const d = (pa[i] as number) - (pb[i] as number);
        if (d !== 0) return d;
      }
    } else if (pa) {
      return -1;
    } else if (pb) {
      return 1;
    }
    if (a.version !== b.version) return a.version < b.version ? -1 : 1;
    return a.order - b.order;
  };
  return [...counts].sort(less).map(({ version, replicas }) => ({ version, replicas }));
}

/** `VersionsFromMachines`: kubelet version (else `spec.version`) per Machine, oldest Machine first. */
function versionsFromMachines(
  machines: MachineObject[],
): { version: string; replicas: number }[] | undefined {
  const sorted = [...machines].sort((a, b) => {
    const ta = new Date(String(a.metadata?.creationTimestamp ?? 0)).getTime();
    const tb = new Date(String(b.metadata?.creationTimestamp ?? 0)).getTime();
    if (ta !== tb) return ta - tb;
    return (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1;
  });
  return statusVersions(
    sorted.map((machine) => machine.status?.nodeInfo?.kubeletVersion || machine.spec?.version),
  );
}

/** `updateStatus` / `setReplicas`: from the Nodes, or from the Machines' conditions (R11). */
export function updateStatus(scope: MachinePoolScope): void {
  const { mp, imp } = scope;
  if (!imp) return;
  mp.status ??= {};
  const machineKind = imp.status?.infrastructureMachineKind;
  if (machineKind !== undefined && machineKind !== null && typeof machineKind !== "string") {
    throw new Error(
      `determining if there are machine pool machines: failed to lookup infrastructureMachineKind: .status.infrastructureMachineKind accessor error: ${JSON.stringify(machineKind)} is of the type ${typeof machineKind}, expected string`,
    );
  }
  if (typeof machineKind === "string" && machineKind !== "") {
    const machines = scope.machines ?? [];
    const count = (type: string) =>
      machines.filter((m) =>
        (m.status?.conditions ?? []).some((c) => c.type === type && c.status === "True"),
      ).length;
    mp.status.readyReplicas = count("Ready");
    mp.status.availableReplicas = count("Available");
    mp.status.upToDateReplicas = count("UpToDate");
    const versions = versionsFromMachines(machines);
    if (versions) mp.status.versions = versions;
    else delete mp.status.versions;
    return;
  }
  const replicas = mp.status.replicas;
  for (const field of ["readyReplicas", "availableReplicas"] as const) {
    if (replicas === undefined) delete mp.status[field];
    else mp.status[field] = replicas;
  }
  if (mp.spec?.replicas === undefined) delete mp.status.upToDateReplicas;
  else mp.status.upToDateReplicas = mp.spec.replicas;
  const versions = versionsFromNodeRefs(mp, scope.nodeRefMap);
  if (versions) mp.status.versions = versions;
  else delete mp.status.versions;
}

/** `VersionsFromNodeRefs`: the kubelet version of each Node the pool references. */
function versionsFromNodeRefs(
  mp: MachinePoolObject,
  nodeRefMap: Map<string, V1Node> | undefined,
): { version: string; replicas: number }[] | undefined {
  const nodeRefs = mp.status?.nodeRefs ?? [];
  if (nodeRefs.length === 0 || !nodeRefMap || nodeRefMap.size === 0) return undefined;
  const byName = new Map([...nodeRefMap.values()].map((node) => [node.metadata?.name, node]));
  return statusVersions(
    nodeRefs.map((ref) => byName.get(ref.name)?.status?.nodeInfo?.kubeletVersion),
  );
}

/** `reconcilePhase`: later rules override earlier ones. */
export function reconcilePhase(mp: MachinePoolObject): void {
  mp.status ??= {};
  const status = mp.status;
  if (!status.phase) status.phase = "Pending";
  const provisioned = status.initialization?.infrastructureProvisioned === true;
  if (status.initialization?.bootstrapDataSecretCreated === true && !provisioned)
    status.phase = "Provisioning";
  if ((status.nodeRefs ?? []).length !== 0) status.phase = "Provisioned";
  const readyReplicas = status.deprecated?.v1beta1?.readyReplicas ?? 0;
  const desired = mp.spec?.replicas;
  const external = replicasManagedByExternalAutoscaler(mp);
  if (provisioned && desired !== undefined && desired === readyReplicas) status.phase = "Running";
  if (provisioned && desired !== undefined && desired > readyReplicas)
    status.phase = external ? "Scaling" : "ScalingUp";
  if (provisioned && desired !== undefined && desired < readyReplicas)
    status.phase = external ? "Scaling" : "ScalingDown";
  if (isDeleting(mp)) status.phase = "Deleting";
}
