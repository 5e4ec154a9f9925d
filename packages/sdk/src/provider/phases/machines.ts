/**
 * The `machines` phase (MachinePool Machines, R11): runs after `group` and before `scale` when the
 * pool's kind has an InfraMachine kind. It deletes the instances whose InfraMachine core's Machine
 * controller is deleting (after it drained the Node) and then lets the InfraMachine go, keeps one
 * InfraMachine per instance with a providerID, removes the ones whose instance vanished (through
 * their Machine, so core deletes the Node), and tells `scale` which instances are on their way out.
 *
 * @module
 */
import type { Machine } from "../../api/cluster.x-k8s.io/v1beta2.js";
import { getCondition, setCondition } from "../../conditions/v1beta2.js";
import { Labels } from "../../contract/constants.js";
import type { InfraMachineObject } from "../../crd/machine.js";
import type { PoolInstance } from "../driver.js";
import { isFailureOf } from "../errors.js";
import {
  desiredInfraMachine,
  hasDeletePriority,
  infraMachineStatus,
  instanceReadyState,
  isDeleting,
  type MachinesState,
  machinesByInfraMachine,
  type PoolMachinesApi,
  remediationOf,
} from "../machines.js";
import type { PoolPhase } from "../phase.js";
import type { PoolScope } from "../scope.js";
import { stableStringify } from "../stamp.js";

const GONE = new Set(["terminating", "terminated"]);

function machinesApi<Spec, Settings>(scope: PoolScope<Spec, Settings>): PoolMachinesApi {
  const api = scope.api.machines;
  if (!api) {
    throw new Error(
      "the machines phase needs scope.api.machines (the kit provides it when the pool kind has an InfraMachine kind)",
    );
  }
  return api;
}

/**
 * Deletes an instance whose InfraMachine is being deleted: shrinking the group while it is larger
 * than the pool needs (a scale-down or a surge), else letting the cloud replace it (a user or a
 * MachineHealthCheck deleted the Machine; the MachinePool still wants as many replicas).
 */
async function deleteDrainedInstance<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  instance: PoolInstance,
  machineName: string,
  groupSize: number,
  desired: number,
  external: boolean,
): Promise<"shrink" | "replace"> {
  const mode = !external && groupSize > desired ? "shrink" : "replace";
  try {
    await scope.call("deleteInstance", (ctx) => scope.driver.deleteInstance(ctx, instance, mode));
  } catch (error) {
    if (!isFailureOf(error, "notFound")) throw error;
  }
  scope.memory.markDeparted(instance.providerID, scope.clock.now());
  scope.events.normal(
    mode === "shrink" ? "InstanceDeleted" : "InstanceReplaced",
    `Machine ${machineName} was drained and its InfraMachine deleted: deleting instance ${instance.id} (${mode})`,
    { instance: instance.id, mode },
  );
  return mode;
}

/** Keeps the InfraMachines of MachinePool Machines in step with the group's instances. */
export const machinesPhase: PoolPhase<unknown, unknown, "group" | "template", "machines"> = {
  name: "machines",
  reads: ["group", "template"],
  writes: ["machines"],
  async run(scope) {
    const kind = scope.options.machines;
    if (!kind) {
      scope.write("machines", null);
      return undefined;
    }
    const api = machinesApi(scope);
    const { group, desired, external } = scope.read("group");
    const { isUpToDate } = scope.read("template");
    const machinePool = scope.machinePool;
    const apiVersion = scope.pool.apiVersion;
    const poolKind = scope.pool.kind;
    if (!machinePool || !apiVersion || !poolKind) {
      // The controller fills these in before any phase runs; a test scope may not.
      throw new Error(
        "the machines phase needs the owner MachinePool and the pool's apiVersion and kind",
      );
    }
    // R11: core creates Machines only once the pool names its InfraMachine kind.
    if (scope.pool.status?.infrastructureMachineKind !== kind.kind) {
      scope.pool.status = { ...scope.pool.status, infrastructureMachineKind: kind.kind };
    }

    const { infraMachines, machines } = await api.list();
    const machineOfIm = machinesByInfraMachine(kind.kind, machines);
    const byProviderID = new Map<string, PoolInstance>();
    for (const instance of group.instances) {
      if (instance.providerID !== "" && instance.state !== "terminated") {
        byProviderID.set(instance.providerID, instance);
      }
    }
    const leaving = new Set<string>();
    const draining = new Set<string>();
    const machineOf = new Map<string, Machine>();
    const deletePriority = new Set<string>();
    const covered = new Set<string>();
    const remediate = new Set<string>();
    let remediationsInFlight = 0;
    let groupSize = group.desiredReplicas;

    for (const im of infraMachines) {
      const name = im.metadata?.name ?? "";
      const providerID = im.spec?.providerID ?? "";
      const instance = byProviderID.get(providerID);
      const machine = machineOfIm.get(name);
      const remediation = remediationOf(machine);
      if (remediation === "inFlight") remediationsInFlight++;
      if (remediation === "recovered" && machine) {
        // A MachineHealthCheck found it healthy again before the kit took it: the mark goes, as
        // core's MachineSet removes it from its own Machines.
        scope.fence();
        await api.writeOwnerRemediated(machine, undefined);
        scope.log.info(
          { machine: machine.metadata?.name },
          "Machine healthy again; remediation mark removed",
        );
      }
      if (instance) {
        covered.add(instance.providerID);
        if (machine) machineOf.set(instance.id, machine);
        if (hasDeletePriority(machine)) deletePriority.add(instance.id);
        if (remediation === "waiting" && !isDeleting(im)) remediate.add(instance.id);
      }
      if (isDeleting(im)) {
        // Core's Machine controller drained the Node and deletes the InfraMachine: the instance goes.
        if (instance && !GONE.has(instance.state)) {
          const mode = await deleteDrainedInstance(
            scope,
            instance,
            name,
            groupSize,
            desired,
            external,
          );
          if (mode === "shrink") groupSize--;
          leaving.add(instance.id);
        } else if (instance) {
          leaving.add(instance.id);
        } else if (im.metadata?.finalizers?.includes(kind.finalizer)) {
          await api.removeFinalizer(im);
          scope.log.info({ infraMachine: name }, "instance gone; InfraMachine released");
        }
        continue;
      }
      if (!instance) {
        // The instance vanished without the kit (out of band, or the kit deleted it before core made
        // a Machine): its Machine goes, so core deletes the Node; without a Machine the object goes.
        if (machine && !isDeleting(machine)) {
          await api.deleteMachine(machine);
          scope.events.normal(
            "MachineDeleted",
            `deleting Machine ${machine.metadata?.name}: its instance (${providerID}) is gone`,
            { machine: machine.metadata?.name },
          );
        } else if (!machine) {
          if (im.metadata?.finalizers?.includes(kind.finalizer)) await api.removeFinalizer(im);
          await api.delete(im);
          scope.log.info(
            { infraMachine: name },
            "instance gone before its Machine; InfraMachine deleted",
          );
        }
        continue;
      }
      if (machine && isDeleting(machine)) {
        draining.add(instance.id);
        leaving.add(instance.id);
      }
      await syncStatus(scope, api, im, instance, isUpToDate(instance));
    }

    // One InfraMachine per instance that has a providerID (none with an empty one).
    const owner = {
      pool: {
        apiVersion,
        kind: poolKind,
        name: scope.key.name,
        namespace: scope.key.namespace,
        uid: scope.pool.metadata?.uid ?? "",
      },
      machinePoolName: machinePool.metadata?.name ?? "",
      clusterName: scope.clusterName ?? "",
      watchFilter: scope.pool.metadata?.labels?.[Labels.WatchFilter],
    };
    for (const instance of group.instances) {
      if (instance.providerID === "" || GONE.has(instance.state)) continue;
      if (covered.has(instance.providerID)) continue;
      const im = desiredInfraMachine(kind, owner, instance);
      im.status = withReady(
        scope,
        infraMachineStatus(instance, isUpToDate(instance), undefined),
        instance,
      );
      scope.fence();
      await api.create(im);
    }

    // Machines core made for InfraMachines that are gone (a race with the kit's own cleanup).
    const known = new Set(infraMachines.map((im) => im.metadata?.name ?? ""));
    for (const machine of machines) {
      const ref = machine.spec?.infrastructureRef;
      if (isDeleting(machine) || ref?.kind !== kind.kind || known.has(ref.name)) continue;
      if (await api.exists(scope.key.namespace, ref.name)) continue;
      await api.deleteMachine(machine);
      scope.events.normal(
        "MachineDeleted",
        `deleting Machine ${machine.metadata?.name}: its InfraMachine ${ref.name} is gone`,
        { machine: machine.metadata?.name },
      );
    }

    const pendingShrink = external ? 0 : Math.min(draining.size, Math.max(0, groupSize - desired));
    const state: MachinesState = {
      leaving,
      pendingShrink,
      machineOf,
      deletePriority,
      groupSize,
      remediate,
      remediationsInFlight,
    };
    scope.write("machines", state);
    return undefined;
  },
};

function withReady<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  status: NonNullable<InfraMachineObject["status"]>,
  instance: PoolInstance,
  previous?: InfraMachineObject["status"],
): NonNullable<InfraMachineObject["status"]> {
  const holder = { status: { ...status, conditions: previous?.conditions ?? [] } };
  setCondition(
    holder,
    { type: "Ready", ...instanceReadyState(instance) },
    {
      clock: scope.clock,
    },
  );
  return holder.status;
}

async function syncStatus<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  api: PoolMachinesApi,
  im: InfraMachineObject,
  instance: PoolInstance,
  upToDate: boolean,
): Promise<void> {
  const previous = im.status;
  const next = withReady(
    scope,
    infraMachineStatus(instance, upToDate, previous),
    instance,
    previous,
  );
  const { conditions: before, ...restBefore } = previous ?? {};
  const { conditions: after, ...restAfter } = next;
  const readyBefore = getCondition({ status: { conditions: before } }, "Ready");
  const readyAfter = getCondition({ status: { conditions: after } }, "Ready");
  const same =
    stableStringify(restBefore) === stableStringify(restAfter) &&
    readyBefore?.status === readyAfter?.status &&
    readyBefore?.reason === readyAfter?.reason &&
    readyBefore?.message === readyAfter?.message;
  if (same) return;
  scope.fence();
  await api.writeStatus(im, next);
}
