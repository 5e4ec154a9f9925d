/**
 * MachinePool Machines (contract R11) as core's emulated MachinePool controller keeps them: one Machine
 * per InfraMachine of the pool, applied when it differs, the pool's Machines listed for its status, and
 * their UpToDate condition.
 *
 * @module
 */
import { setCondition } from "@capi-ts/sdk/conditions";
import {
  CLUSTER_API_GROUP,
  calculateCRDName,
  formatLabelValue,
  Labels,
} from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import { asError, controllerReferenceTo, wrap } from "./controller-helpers.js";
import {
  AggregateReconcileError,
  type MachinePoolScope,
  type ReconcilerDeps,
} from "./machinepool-scope.js";
import {
  CrdResource,
  describeKey,
  type ExternalObject,
  isDeleting,
  jsonCopy,
  type MachineObject,
  type MachinePoolObject,
  MachineResource,
} from "./types.js";

/** The label selector of a pool's Machines and InfraMachines (pool-name and cluster-name labels). */
function machineSelector(mp: MachinePoolObject): string {
  return `${Labels.MachinePoolName}=${formatLabelValue(mp.metadata?.name ?? "")},${Labels.ClusterName}=${mp.spec?.clusterName ?? ""}`;
}

/**
 * `computeDesiredMachine`: the Machine core applies for an InfraMachine — controller-owned by the pool,
 * the template's labels and annotations plus the pool-name and cluster-name labels, an empty
 * `dataSecretName`, the InfraMachine as `infrastructureRef`, and the Node's kubelet version.
 */
function computeDesiredMachine(
  mp: MachinePoolObject,
  infraMachine: ExternalObject,
  existing: MachineObject | undefined,
  node: V1Node | undefined,
): MachineObject {
  const labels: Record<string, string> = { ...(mp.spec?.template?.metadata?.labels ?? {}) };
  labels[Labels.MachinePoolName] = formatLabelValue(mp.metadata?.name ?? "");
  labels[Labels.ClusterName] = mp.spec?.clusterName ?? "";
  const annotations = { ...(mp.spec?.template?.metadata?.annotations ?? {}) };
  const metadata: MachineObject["metadata"] = {
    name: existing?.metadata?.name ?? infraMachine.metadata?.name ?? "",
    namespace: mp.metadata?.namespace ?? "",
    ownerReferences: [controllerReferenceTo("MachinePool", mp)],
    labels,
  };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (existing?.metadata?.uid) metadata.uid = existing.metadata.uid;
  const [group] = (infraMachine.apiVersion ?? "").includes("/")
    ? (infraMachine.apiVersion ?? "").split("/")
    : [""];
  const spec: MachineObject["spec"] = {
    clusterName: mp.spec?.clusterName ?? "",
    bootstrap: { dataSecretName: "" },
    infrastructureRef: {
      apiGroup: group ?? "",
      kind: infraMachine.kind ?? "",
      name: infraMachine.metadata?.name ?? "",
    },
  };
  const kubeletVersion = node?.status?.nodeInfo?.kubeletVersion;
  if (kubeletVersion) spec.version = kubeletVersion;
  return {
    apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
    kind: "Machine",
    metadata,
    spec,
  };
}

/**
 * Core's SSA caching proxy skips an apply it already sent for the same resourceVersion; the emulator
 * skips an apply whose fields the Machine already has, which sends the same requests at steady state.
 */
function machineUnchanged(existing: MachineObject, desired: MachineObject): boolean {
  const subset = (want: unknown, have: unknown): boolean => {
    if (want === null || typeof want !== "object") return want === have;
    if (Array.isArray(want)) {
      return (
        Array.isArray(have) &&
        want.length === have.length &&
        want.every((item, i) => subset(item, have[i]))
      );
    }
    if (have === null || typeof have !== "object") return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
      subset(v, (have as Record<string, unknown>)[k]),
    );
  };
  return subset(desired.metadata, existing.metadata) && subset(desired.spec, existing.spec);
}

/**
 * `reconcileMachines`: with `status.infrastructureMachineKind` set, one Machine per InfraMachine
 * labelled for the pool (created or updated by server-side apply), and a watch on that kind.
 */
export async function reconcileMachines(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
  imp: ExternalObject,
): Promise<void> {
  const { mp } = scope;
  const rawKind = imp.status?.infrastructureMachineKind;
  if (rawKind === undefined || rawKind === null) return;
  if (typeof rawKind !== "string") {
    throw new Error(
      `failed to retrieve infraMachineKind from infrastructure provider for MachinePool ${describeKey(mp)}: failed to json-decode field "status.infrastructureMachineKind" value from "${imp.apiVersion}, Kind=${imp.kind}": json: cannot unmarshal ${Array.isArray(rawKind) ? "array" : typeof rawKind} into Go value of type string`,
    );
  }
  const namespace = mp.metadata?.namespace ?? "";
  const selector = machineSelector(mp);
  const [group, version] = (imp.apiVersion ?? "").includes("/")
    ? (imp.apiVersion ?? "").split("/")
    : ["", imp.apiVersion ?? ""];
  const crd = await deps.cache.get(CrdResource, {
    name: calculateCRDName(group ?? "", rawKind),
  });
  if (!crd?.spec?.versions?.some((v) => v.name === version && v.served !== false)) {
    throw new Error(
      `failed to list infra machines for MachinePool "${mp.metadata?.name}" in namespace "${namespace}": no matches for kind "${rawKind}List" in version "${imp.apiVersion}"`,
    );
  }
  const resource: ResourceDescriptor<ExternalObject> = {
    group: group ?? "",
    version: version ?? "",
    kind: rawKind,
    plural: crd.spec?.names?.plural ?? "",
    scope: crd.spec?.scope === "Cluster" ? "Cluster" : "Namespaced",
    subresources: { status: true },
  };
  await deps.watchInfraMachines(resource);
  const infraMachines = await deps.cache.list(resource, {
    namespace,
    labelSelector: selector,
  });
  const machines = await deps.cache.list(MachineResource, {
    namespace,
    labelSelector: selector,
  });
  await createOrUpdateMachines(deps, scope, machines, infraMachines);
}

async function createOrUpdateMachines(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
  machines: MachineObject[],
  infraMachines: ExternalObject[],
): Promise<void> {
  const { mp } = scope;
  const byInfraName = new Map<string, MachineObject>();
  for (const machine of machines) {
    byInfraName.set(machine.spec?.infrastructureRef?.name ?? "", machine);
  }
  const created: MachineObject[] = [];
  const errors: Error[] = [];
  for (const infraMachine of infraMachines) {
    const providerID = infraMachine.spec?.providerID;
    const node = typeof providerID === "string" ? scope.nodeRefMap?.get(providerID) : undefined;
    const existing = byInfraName.get(infraMachine.metadata?.name ?? "");
    const desired = computeDesiredMachine(mp, infraMachine, existing, node);
    if (existing) {
      if (machineUnchanged(existing, desired)) continue;
      try {
        await deps.writer.apply(MachineResource, desired, "machinepool-controller", {
          reason: `update the Machine of ${infraMachine.kind} ${infraMachine.metadata?.name}`,
          machinePool: scope.key,
        });
      } catch (error) {
        errors.push(
          wrap(
            error,
            `failed to update Machine "${describeKey(desired)}": failed to apply Machine`,
          ),
        );
      }
      continue;
    }
    try {
      await deps.writer.apply(MachineResource, desired, "machinepool-controller", {
        reason: `create a Machine for ${infraMachine.kind} ${infraMachine.metadata?.name}`,
        machinePool: scope.key,
      });
      scope.trace.notes.push({ event: "MachineCreated", detail: desired.metadata?.name ?? "" });
      created.push(desired);
    } catch (error) {
      errors.push(
        wrap(
          error,
          `failed to create new Machine for infraMachine "${infraMachine.metadata?.name}" in namespace "${infraMachine.metadata?.namespace}": failed to apply Machine`,
        ),
      );
    }
  }
  // Core polls its cache (every 100 ms, for up to 10 s) until each new Machine shows up.
  for (const machine of created) {
    const deadline = Date.now() + 10_000;
    const key = {
      namespace: machine.metadata?.namespace ?? "",
      name: machine.metadata?.name ?? "",
    };
    while (!(await deps.cache.get(MachineResource, key))) {
      if (Date.now() > deadline) {
        errors.push(
          new Error(
            `failed to wait for machines to be created: failed waiting for machine object ${key.namespace}/${key.name} to be created: context deadline exceeded`,
          ),
        );
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  if (errors.length > 0) {
    throw wrap(
      new AggregateReconcileError(errors),
      `failed to create machines for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}"`,
    );
  }
}

/** `getMachinesForMachinePool`: the pool's Machines, minus those another controller owns. */
export async function getMachinesForMachinePool(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
): Promise<undefined> {
  const { mp } = scope;
  const machines = await deps.cache.list(MachineResource, {
    namespace: mp.metadata?.namespace ?? "",
    labelSelector: machineSelector(mp),
  });
  scope.machines = machines.filter((machine) => {
    const controller = (machine.metadata?.ownerReferences ?? []).find((r) => r.controller);
    return !controller || controller.uid === mp.metadata?.uid;
  });
  return undefined;
}

/** `setMachinesUptoDate`: every Machine of the pool is UpToDate unless it is being deleted. */
export async function setMachinesUpToDate(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
): Promise<undefined> {
  const errors: Error[] = [];
  for (const cached of scope.machines ?? []) {
    const machine = jsonCopy(cached);
    const helper = PatchHelper.snapshot(machine, { resource: MachineResource });
    setCondition(
      machine,
      isDeleting(machine)
        ? {
            type: "UpToDate",
            status: "False",
            reason: "NotUpToDate",
            message: "Machine is being deleted",
          }
        : { type: "UpToDate", status: "True", reason: "UpToDate" },
    );
    try {
      await helper.apply(
        deps.writer.transport(MachineResource, {
          reason: "UpToDate condition of a MachinePool Machine",
          machinePool: scope.key,
        }),
        machine,
        { ownedConditions: ["UpToDate"] },
      );
    } catch (error) {
      errors.push(asError(error));
    }
  }
  if (errors.length > 0) throw new AggregateReconcileError(errors);
  return undefined;
}
