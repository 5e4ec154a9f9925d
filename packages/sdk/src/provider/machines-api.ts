/**
 * {@link PoolMachinesApi} over the manager's cache and client: the InfraMachines a pool owns, the
 * Machines core made for its MachinePool, and the writes the `machines` phase makes.
 *
 * @module
 */
import type { Machine } from "../api/cluster.x-k8s.io/v1beta2.js";
import { deleteV1Beta1Condition, setV1Beta1Condition } from "../conditions/v1beta1.js";
import { deleteCondition, setCondition } from "../conditions/v1beta2.js";
import { Labels } from "../contract/constants.js";
import { CoreMachine } from "../contract/core-kinds.js";
import { removeFinalizer } from "../contract/finalizers.js";
import { formatLabelValue } from "../contract/format.js";
import type { InfraMachineObject } from "../crd/machine.js";
import { PatchHelper } from "../patch/helper.js";
import type { ReconcileContext } from "../runtime/controller.js";
import { isAlreadyExists, isNotFound } from "../runtime/errors.js";
import { OWNER_UID_INDEX } from "../runtime/informer-types.js";
import type { ResourceDescriptor } from "../runtime/resource.js";
import {
  type InfraMachineKind,
  OwnerRemediatedReasons,
  type PoolMachinesApi,
  RemediationConditions,
} from "./machines.js";

/** Which pool the API is for. */
export interface InfraMachinesOf {
  /** The pool's namespace. */
  readonly namespace: string;
  /** The Cluster's name (the cluster-name label of the Machines). */
  readonly clusterName: string;
  /** The pool's kind and name (the owner reference of its InfraMachines). */
  readonly poolKind: string;
  /** The pool's name. */
  readonly poolName: string;
  /** The pool's UID, when known (owner references with another UID belong to an older pool). */
  readonly poolUid: string | undefined;
  /** The owner MachinePool's name (absent while deleting, if it is gone). */
  readonly machinePoolName: string | undefined;
}

async function ignoreNotFound(run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** The MachinePool Machines reads and writes of one reconcile. */
export function infraMachinesApi(
  rc: ReconcileContext,
  kind: InfraMachineKind,
  of: InfraMachinesOf,
): PoolMachinesApi {
  const resource = kind.resource as ResourceDescriptor<InfraMachineObject>;
  const isOurs = (im: InfraMachineObject) =>
    (im.metadata?.ownerReferences ?? []).some(
      (ref) =>
        ref.kind === of.poolKind &&
        ref.name === of.poolName &&
        (of.poolUid === undefined || ref.uid === of.poolUid),
    );
  const poolLabel = of.machinePoolName ? formatLabelValue(of.machinePoolName) : undefined;
  const isPoolMachine = (machine: Machine) =>
    poolLabel !== undefined &&
    machine.metadata?.labels?.[Labels.MachinePoolName] === poolLabel &&
    machine.metadata?.labels?.[Labels.ClusterName] === of.clusterName &&
    // Core ignores Machines another controller owns (shouldExcludeMachine); so does the kit.
    (machine.metadata?.ownerReferences ?? []).some(
      (ref) =>
        ref.controller === true && ref.kind === "MachinePool" && ref.name === of.machinePoolName,
    );
  return {
    async list() {
      // By the owner-UID index every informer keeps: the pool's own, not every InfraMachine of the
      // namespace on each reconcile. Without a UID (not read yet) the namespace is listed.
      const candidates =
        of.poolUid !== undefined
          ? (await rc.cache.byIndex(resource, OWNER_UID_INDEX, of.poolUid)).filter(
              (im) => im.metadata?.namespace === of.namespace,
            )
          : await rc.cache.list(resource, { namespace: of.namespace });
      const infraMachines = candidates.filter(isOurs);
      const machines = poolLabel
        ? (await rc.cache.list(CoreMachine, { namespace: of.namespace })).filter(isPoolMachine)
        : [];
      return { infraMachines, machines };
    },
    async create(infraMachine) {
      const { status, ...object } = infraMachine;
      let created: InfraMachineObject;
      try {
        created = await rc.client.create(resource, object);
      } catch (error) {
        // The cache had not seen the object yet: the next reconcile brings its status up to date.
        if (isAlreadyExists(error)) return;
        throw error;
      }
      if (status) await rc.client.mergePatchStatus(resource, created, { status });
    },
    async writeStatus(infraMachine, status) {
      // A merge patch keeps keys it does not name: the ones the kit dropped are sent as null.
      const cleared: Record<string, unknown> = {
        addresses: null,
        failureDomain: null,
        interruptible: null,
      };
      await ignoreNotFound(() =>
        rc.client.mergePatchStatus(resource, infraMachine, { status: { ...cleared, ...status } }),
      );
    },
    async removeFinalizer(infraMachine) {
      const copy = structuredClone(infraMachine);
      const patch = PatchHelper.snapshot(copy, { resource });
      if (!removeFinalizer(copy, kind.finalizer)) return;
      await ignoreNotFound(() => patch.apply(rc.client, copy));
    },
    async delete(infraMachine) {
      const uid = infraMachine.metadata?.uid;
      await ignoreNotFound(() =>
        rc.client.delete(resource, infraMachine, uid ? { preconditions: { uid } } : {}),
      );
    },
    async deleteMachine(machine) {
      const uid = machine.metadata?.uid;
      await ignoreNotFound(() =>
        rc.client.delete(CoreMachine, machine, uid ? { preconditions: { uid } } : {}),
      );
    },
    async writeOwnerRemediated(machine, state) {
      const copy = structuredClone(machine);
      const patch = PatchHelper.snapshot(copy, { resource: CoreMachine });
      const type = RemediationConditions.OwnerRemediated;
      if (state === undefined) {
        deleteCondition(copy, type);
        deleteV1Beta1Condition(copy, type);
      } else {
        setCondition(copy, { type, status: "False", reason: state.reason, message: state.message });
        // The deprecated mirror as core's MachineSet writes it: True once the owner deletes the
        // Machine, False (a warning) while it waits.
        if (state.reason === OwnerRemediatedReasons.MachineDeleting) {
          setV1Beta1Condition(copy, { type, status: "True" });
        } else {
          setV1Beta1Condition(copy, {
            type,
            status: "False",
            severity: "Warning",
            reason: OwnerRemediatedReasons.WaitingForRemediation,
            message: state.message,
          });
        }
      }
      await ignoreNotFound(() =>
        patch.apply(rc.client, copy, { ownedConditions: [type], resource: CoreMachine }),
      );
    },
    async exists(namespace, name) {
      try {
        await rc.client.get(resource, { namespace, name });
        return true;
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },
  };
}
