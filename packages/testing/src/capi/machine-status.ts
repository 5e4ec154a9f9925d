/**
 * What core's emulated Machine controller writes at the end of every reconcile: the v1beta2 conditions
 * and the phase computed from what the reconcile found, the deprecated v1beta1 Ready summary, and the
 * one patch of the Machine with the conditions core owns.
 *
 * @module
 */
import {
  type ConditionLike,
  type ConditionStatus,
  getCondition,
  getV1Beta1Conditions,
  type MergePriority,
  mirrorCondition,
  setCondition,
  summaryCondition,
} from "@capi-ts/sdk/conditions";
import type { PatchHelper } from "@capi-ts/sdk/patch";
import type { ReconcileResult } from "@capi-ts/sdk/runtime";
import { ClusterNotConnectedError } from "./clustercache.js";
import { asError, clusterKey } from "./controller-helpers.js";
import { drainDelays } from "./drain-report.js";
import type { MachineReconcilerDeps, MachineScope } from "./machine-scope.js";
import { nowRfc3339 } from "./machine-scope.js";
import { nodeCondition, summarizeNode } from "./node-health.js";
import { isDeleting, type MachineObject, MachineResource } from "./types.js";
import { setV1Beta1Ready, summarizeV1Beta1 } from "./v1beta1-summary.js";
import type { WriteContext } from "./writes.js";

/**
 * The conditions core's Machine controller owns (`patchMachine`): v1beta2 `WithOwnedConditions`, then
 * the deprecated v1beta1 `WithOwnedV1Beta1Conditions` (the SDK's patch helper takes both by type).
 */
const OWNED_CONDITIONS = [
  "BootstrapReady",
  "DrainingSucceeded",
  "Paused",
  "Available",
  "Ready",
  "BootstrapConfigReady",
  "InfrastructureReady",
  "NodeReady",
  "NodeHealthy",
  "Deleting",
  "Updating",
];

const V1BETA1_SUMMARY_TYPES = [
  "InfrastructureReady",
  "BootstrapReady",
  "MachineHealthCheckSucceeded",
  "OwnerRemediated",
  "DrainingSucceeded",
];

/**
 * `patchMachine`'s deprecated `v1beta1conditions.SetSummary(Ready)` over InfrastructureReady,
 * BootstrapReady, MachineHealthCheckSucceeded, OwnerRemediated and DrainingSucceeded, with the step
 * counter ("N of 2 completed") while the Machine is not deleting, has no providerID, and only
 * BootstrapReady/InfrastructureReady are in scope.
 */
function setV1Beta1ReadySummary(machine: MachineObject): void {
  const summary = summarizeV1Beta1(getV1Beta1Conditions(machine), V1BETA1_SUMMARY_TYPES);
  if (!summary) return;
  const stepCounter =
    !isDeleting(machine) &&
    !machine.spec?.providerID &&
    summary.inScope.every((c) => c.type === "BootstrapReady" || c.type === "InfrastructureReady");
  const trueCount = summary.groups.find((g) => g.status === "True" && g.severity === "")?.conditions
    .length;
  setV1Beta1Ready(
    machine,
    summary,
    stepCounter ? `${trueCount ?? 0} of 2 completed` : (summary.first.message ?? ""),
  );
}

/** `patchMachine`: the deprecated Ready summary, then the patch with core's owned conditions. */
export async function patchMachine(
  deps: MachineReconcilerDeps,
  helper: PatchHelper<MachineObject>,
  machine: MachineObject,
  context: WriteContext,
  observedGeneration: boolean,
): Promise<void> {
  setV1Beta1ReadySummary(machine);
  await helper.apply(deps.writer.transport(MachineResource, context), machine, {
    ownedConditions: OWNED_CONDITIONS,
    statusObservedGeneration: observedGeneration,
  });
}

/** `transformControlPlaneAndEtcdConditions`: one line for control plane components with one message. */
function transformControlPlaneLines(lines: string[]): string[] {
  const isControlPlane = (c: string) =>
    c.startsWith("* APIServer") ||
    c.startsWith("* ControllerManager") ||
    c.startsWith("* Scheduler") ||
    c === "* EtcdPodHealthy";
  const out: string[] = [];
  let count = 0;
  let first = "";
  for (const line of lines) {
    const sep = line.indexOf(":");
    if (sep < 0) {
      out.push(line);
      continue;
    }
    const c = line.slice(0, sep);
    const msg = line.slice(sep + 1);
    if (!isControlPlane(c)) {
      out.push(line);
      continue;
    }
    if (first === "") {
      first = msg;
      out.push(`* Control plane components:${msg}`);
      count++;
      continue;
    }
    if (first !== msg) return lines;
    count++;
  }
  return count === 1 ? lines : out;
}

/** `updateStatus`: the conditions core computes at the end of every reconcile, then the phase. */
export function updateStatus(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): ReconcileResult | undefined {
  const { machine } = s;
  // No bootstrap configRef (a MachinePool Machine's dataSecretName is ""): the data is provided.
  setCondition(machine, {
    type: "BootstrapConfigReady",
    status: "True",
    reason: "DataSecretProvided",
  });
  setInfrastructureReadyCondition(s);
  setNodeConditions(deps, s);
  if (isDeleting(machine)) {
    setCondition(machine, {
      type: "Deleting",
      status: "True",
      reason: s.deletingReason ?? "",
      message: s.deletingMessage ?? "",
    });
  } else {
    setCondition(machine, { type: "Deleting", status: "False", reason: "NotDeleting" });
  }
  setCondition(machine, { type: "Updating", status: "False", reason: "NotUpdating" });
  setReadyCondition(machine);
  setPhase(machine);
  return setAvailableCondition(machine);
}

function setInfrastructureReadyCondition(s: MachineScope): void {
  const { machine } = s;
  const kind = machine.spec?.infrastructureRef?.kind ?? "";
  const provisioned = machine.status?.initialization?.infrastructureProvisioned === true;
  if (s.infraMachine) {
    try {
      const ready = mirrorCondition(s.infraMachine, "Ready", {
        targetConditionType: "InfrastructureReady",
        fallback: {
          status: provisioned ? "True" : "False",
          reason: provisioned ? "Ready" : "NotReady",
          message: provisioned ? "" : `${kind} status.initialization.provisioned is false`,
        },
      });
      if (ready.reason === "NoReasonReported" && ready.status === "True") ready.reason = "Ready";
      setCondition(machine, ready);
    } catch (error) {
      setCondition(machine, {
        type: "InfrastructureReady",
        status: "Unknown",
        reason: "InvalidConditionReported",
        message: asError(error).message,
      });
    }
    return;
  }
  if (!s.infraMachineIsNotFound) {
    setCondition(machine, {
      type: "InfrastructureReady",
      status: "Unknown",
      reason: "InternalError",
      message: "Please check controller logs for errors",
    });
    return;
  }
  if (isDeleting(machine)) {
    setCondition(machine, {
      type: "InfrastructureReady",
      status: "False",
      reason: provisioned ? "ObjectDeleted" : "ObjectDoesNotExist",
      message: provisioned ? `${kind} has been deleted` : `${kind} does not exist`,
    });
    return;
  }
  setCondition(machine, {
    type: "InfrastructureReady",
    status: "False",
    reason: provisioned ? "ObjectDeleted" : "ObjectDoesNotExist",
    message: provisioned
      ? `${kind} has been deleted while the Machine still exists`
      : `${kind} does not exist`,
  });
}

/** `setNodeHealthyAndReadyConditions`. */
function setNodeConditions(deps: MachineReconcilerDeps, s: MachineScope): void {
  const { cluster, machine } = s;
  const both = (status: ConditionStatus, reason: string, message: string) => {
    for (const type of ["NodeReady", "NodeHealthy"])
      setCondition(machine, { type, status, reason, message });
  };
  const has = (type: string) => getCondition(machine, type) !== undefined;
  if (cluster.status?.initialization?.infrastructureProvisioned !== true) {
    both(
      "Unknown",
      "InspectionFailed",
      "Waiting for Cluster status.initialization.infrastructureProvisioned to be true",
    );
    return;
  }
  const initialized = (cluster.status?.conditions ?? []).find(
    (c) => c.type === "ControlPlaneInitialized",
  );
  if (initialized?.status !== "True") {
    both("Unknown", "InspectionFailed", "Waiting for Cluster control plane to be initialized");
    return;
  }
  const health = deps.clusterCache.healthCheckingState(clusterKey(cluster));
  if (health.lastProbeSuccessTime === undefined && health.consecutiveFailures < 5) {
    if (!has("NodeReady") || !has("NodeHealthy"))
      both("Unknown", "ConnectionDown", "Remote connection not established yet");
    return;
  }
  const lastSuccess = health.lastProbeSuccessTime ?? 0;
  const since = Math.max(
    lastSuccess,
    new Date(String(initialized.lastTransitionTime ?? 0)).getTime(),
  );
  const lastProbeMessage =
    health.lastProbeSuccessTime === undefined
      ? ""
      : `Last successful probe at ${new Date(Math.floor(lastSuccess / 1000) * 1000).toISOString().replace(".000Z", "Z")}`;
  if (Date.now() - since > deps.options.remoteConditionsGracePeriodMs) {
    both("Unknown", "ConnectionDown", lastProbeMessage);
    return;
  }
  if (s.nodeGetError) {
    if (s.nodeGetError instanceof ClusterNotConnectedError) {
      if (!has("NodeReady") || !has("NodeHealthy"))
        both("Unknown", "ConnectionDown", lastProbeMessage);
      return;
    }
    both("Unknown", "InternalError", "Please check controller logs for errors");
    return;
  }
  const node = s.node;
  if (node) {
    const ready = nodeCondition(node, "Ready");
    if (ready) {
      const status = ready.status as ConditionStatus;
      const input = {
        type: "NodeReady",
        status,
        reason:
          status === "True"
            ? "NodeReady"
            : status === "False"
              ? "NodeNotReady"
              : "NodeReadyUnknown",
        message: status !== "True" && ready.message ? `* Node.Ready: ${ready.message}` : "",
        ...(ready.lastTransitionTime
          ? { lastTransitionTime: String(ready.lastTransitionTime) }
          : {}),
      };
      setCondition(machine, input);
    } else {
      setCondition(machine, {
        type: "NodeReady",
        status: "Unknown",
        reason: "NodeReadyUnknown",
        message: "* Node.Ready: Condition not yet reported",
      });
    }
    const summary = summarizeNode(node);
    setCondition(machine, { type: "NodeHealthy", ...summary });
    return;
  }
  const nodeRef = machine.status?.nodeRef?.name;
  if (isDeleting(machine)) {
    if (nodeRef) both("False", "NodeDeleted", `Node ${nodeRef} has been deleted`);
    else both("Unknown", "NodeDoesNotExist", "Node does not exist");
    return;
  }
  if (nodeRef) {
    both("False", "NodeDeleted", `Node ${nodeRef} has been deleted while the Machine still exists`);
    return;
  }
  if (machine.spec?.providerID) {
    both(
      "Unknown",
      "InspectionFailed",
      `Waiting for a Node with spec.providerID ${machine.spec.providerID} to exist`,
    );
    return;
  }
  both(
    "Unknown",
    "InspectionFailed",
    `Waiting for ${machine.spec?.infrastructureRef?.kind ?? ""} to report spec.providerID`,
  );
}

/** `setReadyCondition`: the summary with core's custom merge strategy and the Deleting override. */
function setReadyCondition(machine: MachineObject): void {
  const gates = machine.spec?.readinessGates ?? [];
  const negative = [
    "Deleting",
    "Updating",
    ...gates.filter((g) => g.polarity === "Negative").map((g) => g.conditionType),
  ];
  const deleting = isDeleting(machine);
  const defaultPriority = (c: ConditionLike): MergePriority => {
    const neg = negative.includes(c.type);
    if (c.status === "True") return neg ? "issue" : "info";
    if (c.status === "False") return neg ? "info" : "issue";
    return "unknown";
  };
  const priority = (c: ConditionLike): MergePriority => {
    if (deleting) {
      if (
        (c.type === "BootstrapConfigReady" || c.type === "InfrastructureReady") &&
        (c.reason === "ObjectDeleted" || c.reason === "ObjectDoesNotExist")
      )
        return "info";
      if (
        c.type === "NodeHealthy" &&
        (c.reason === "NodeDeleted" || c.reason === "NodeDoesNotExist")
      )
        return "info";
    }
    return defaultPriority(c);
  };
  const overrides: ConditionLike[] = [];
  if (deleting) {
    const current = getCondition(machine, "Deleting");
    let message = "Machine deletion in progress";
    if (current) {
      message = `Machine deletion in progress, stage: ${current.reason}`;
      const since = Date.now() - new Date(String(machine.metadata?.deletionTimestamp)).getTime();
      if (since > 15 * 60_000) {
        message = `Machine deletion in progress since more than 15m, stage: ${current.reason}`;
        const drainStart = machine.status?.deletion?.nodeDrainStartTime;
        if (
          current.reason === "DrainingNode" &&
          drainStart &&
          Date.now() - new Date(drainStart).getTime() > 5 * 60_000
        ) {
          const delays = drainDelays(current.message ?? "");
          if (delays.length > 0) message += `, delay likely due to ${delays.join(", ")}`;
        }
      }
    }
    overrides.push({ type: "Deleting", status: "True", reason: "Deleting", message });
  }
  let ready: ConditionLike & { status: ConditionStatus; reason: string };
  try {
    ready = summaryCondition(machine, "Ready", {
      forConditionTypes: [
        "Deleting",
        "Updating",
        "BootstrapConfigReady",
        "InfrastructureReady",
        "NodeHealthy",
        "HealthCheckSucceeded",
        ...gates.map((g) => g.conditionType),
      ],
      ignoreTypesIfMissing: ["HealthCheckSucceeded"],
      priority,
      summaryMessageTransform: transformControlPlaneLines,
      reasons: { issue: "NotReady", unknown: "ReadyUnknown", info: "Ready" },
      overrideConditions: overrides,
    });
  } catch {
    ready = {
      type: "Ready",
      status: "Unknown",
      reason: "InternalError",
      message: "Please check controller logs for errors",
    };
  }
  setCondition(machine, ready);
}

/** `setAvailableCondition`: Ready for at least `minReadySeconds`. */
function setAvailableCondition(machine: MachineObject): ReconcileResult | undefined {
  const ready = getCondition(machine, "Ready");
  if (ready?.status !== "True") {
    setCondition(machine, { type: "Available", status: "False", reason: "NotReady" });
    return undefined;
  }
  const minReadyMs = (machine.spec?.minReadySeconds ?? 0) * 1000;
  const remaining = new Date(ready.lastTransitionTime).getTime() + minReadyMs - Date.now();
  if (remaining <= 0) {
    setCondition(machine, { type: "Available", status: "True", reason: "Available" });
    return undefined;
  }
  setCondition(machine, {
    type: "Available",
    status: "False",
    reason: "WaitingForMinReadySeconds",
  });
  return { requeueAfter: Math.ceil(remaining) };
}

/** `setMachinePhaseAndLastUpdated`: later rules override earlier ones. */
function setPhase(machine: MachineObject): void {
  machine.status ??= {};
  const status = machine.status;
  const original = status.phase;
  if (!status.phase) status.phase = "Pending";
  const provisioned = status.initialization?.infrastructureProvisioned === true;
  if (status.initialization?.bootstrapDataSecretCreated === true && !provisioned)
    status.phase = "Provisioning";
  if (machine.spec?.providerID) status.phase = "Provisioned";
  if (status.nodeRef?.name && provisioned) status.phase = "Running";
  if (getCondition(machine, "Updating")?.status === "True") status.phase = "Updating";
  if (isDeleting(machine)) status.phase = "Deleting";
  if (status.phase !== original) status.lastUpdated = nowRfc3339();
}
