/**
 * MachinePool Machines (contract R11, §3) as the kit keeps them: one InfraMachine per instance that
 * has a providerID, labelled for core (`cluster.x-k8s.io/cluster-name`, `cluster.x-k8s.io/pool-name`
 * with the formatted MachinePool name) and owned (not controlled) by the pool. Core creates a Machine
 * for each; the kit deletes an instance only through its Machine, so core cordons and drains the
 * Node first, then deletes the InfraMachine, whose finalizer the kit removes once the instance is
 * gone. This module holds the pure parts: names, the object the kit wants, and which instances are
 * leaving.
 *
 * @module
 */
import type { Machine } from "../api/cluster.x-k8s.io/v1beta2.js";
import { Annotations, Labels } from "../contract/constants.js";
import { formatLabelValue } from "../contract/format.js";
import type { InfraMachineObject, InfraMachineResource } from "../crd/machine.js";
import type { PoolInstance } from "./driver-types.js";
import { shortHash } from "./stamp.js";

/** The InfraMachine kind of a pool kind, as the kit needs it (`defineInfraMachinePool(...).machine` fits). */
export interface InfraMachineKind {
  /** The kind, e.g. `FooMachinePoolMachine`. */
  readonly kind: string;
  /** Where its objects are served (the pool's group and storage version). */
  readonly resource: InfraMachineResource;
  /** The kit's finalizer on each InfraMachine. */
  readonly finalizer: string;
}

/** The Kubernetes reads and writes of MachinePool Machines (a fake in unit tests). */
export interface PoolMachinesApi {
  /** The InfraMachines the pool owns and the Machines core made for the pool (from the cache). */
  list(): Promise<{ infraMachines: InfraMachineObject[]; machines: Machine[] }>;
  /** Creates an InfraMachine, then writes its status. */
  create(infraMachine: InfraMachineObject): Promise<void>;
  /** Replaces the InfraMachine's status. */
  writeStatus(
    infraMachine: InfraMachineObject,
    status: InfraMachineObject["status"],
  ): Promise<void>;
  /** Removes the kit's finalizer (NotFound is done). */
  removeFinalizer(infraMachine: InfraMachineObject): Promise<void>;
  /** Deletes an InfraMachine (NotFound is done). */
  delete(infraMachine: InfraMachineObject): Promise<void>;
  /** Deletes a Machine: core drains its Node, then deletes its InfraMachine (NotFound is done). */
  deleteMachine(machine: Machine): Promise<void>;
  /** Whether an InfraMachine exists on the server (a fresh read, not the cache). */
  exists(namespace: string, name: string): Promise<boolean>;
  /**
   * Sets the Machine's `OwnerRemediated` condition (v1beta2, with its v1beta1 mirror) as its owner
   * does, or removes it (`undefined`), owning only that condition (NotFound is done).
   */
  writeOwnerRemediated(machine: Machine, state: OwnerRemediatedState | undefined): Promise<void>;
}

/**
 * The `OwnerRemediated` condition the kit writes on a MachinePool Machine, as core's MachineSet
 * controller writes it on its own: `MachineDeleting` just before the Machine is deleted (core's
 * MachineSet counts those as remediations in flight), `RemediationDeferred` while taking the Machine
 * would break the pool's availability floor.
 */
export interface OwnerRemediatedState {
  /** The v1beta2 reason (`MachineDeleting` or `RemediationDeferred`). */
  readonly reason: (typeof OwnerRemediatedReasons)[keyof typeof OwnerRemediatedReasons];
  /** Why, for a human. */
  readonly message: string;
}

/** Condition types and reasons of MachineHealthCheck remediation, as core's API spells them. */
export const OwnerRemediatedReasons = {
  /** Set by the MachineHealthCheck on a Machine it found unhealthy: the owner's turn. */
  WaitingForRemediation: "WaitingForRemediation",
  /** The owner deletes the Machine (in flight until it is gone). */
  MachineDeleting: "MachineDeleting",
  /** The owner waits: remediating now would break its availability or in-flight budget. */
  RemediationDeferred: "RemediationDeferred",
} as const;

/** The Machine condition types MachineHealthCheck remediation uses. */
export const RemediationConditions = {
  /** Set by the MachineHealthCheck: `False` when the Machine is unhealthy. */
  HealthCheckSucceeded: "HealthCheckSucceeded",
  /** Set `False` by the MachineHealthCheck for the owner to remediate; the owner updates it. */
  OwnerRemediated: "OwnerRemediated",
} as const;

/** What the `machines` phase found, for the phases after it. */
export interface MachinesState {
  /**
   * Instances on their way out through their Machine (being drained, or their InfraMachine being
   * deleted): the plan no longer counts them as members or as available.
   */
  readonly leaving: ReadonlySet<string>;
  /**
   * How many of the leaving instances will shrink the group when the kit deletes them (the rest
   * are replaced by the cloud): the plan sees the group's desired size less these.
   */
  readonly pendingShrink: number;
  /** The Machine of each instance (by instance ID), where core made one. */
  readonly machineOf: ReadonlyMap<string, Machine>;
  /** Instances whose Machine carries `cluster.x-k8s.io/delete-machine`: deleted first. */
  readonly deletePriority: ReadonlySet<string>;
  /** The group's desired size once the drained instances this reconcile deleted shrank it. */
  readonly groupSize: number;
  /**
   * Instances whose Machine a MachineHealthCheck marked for remediation by its owner
   * (`HealthCheckSucceeded=False`, `OwnerRemediated=False`), not yet being deleted: the plan
   * replaces them within the rollout budget.
   */
  readonly remediate: ReadonlySet<string>;
  /** Remediations the kit started whose Machine is still on its way out (the in-flight budget). */
  readonly remediationsInFlight: number;
}

const MAX_NAME = 63;

/**
 * The InfraMachine's name for an instance (core names the Machine the same): `<pool>-<instance ID>`
 * when that is a valid, lossless DNS label of at most 63 characters, else a shortened form with a
 * hash of the ID, so two instances never share a name.
 *
 * @example
 * ```ts
 * infraMachineName("pool-a", "i-0abc"); // "pool-a-i-0abc"
 * infraMachineName("pool-a", "/subscriptions/x/vm/3"); // "pool-a-subscriptions-x-vm-3-<8 hex>"
 * ```
 */
export function infraMachineName(poolName: string, instanceID: string): string {
  const cleaned = instanceID
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  const plain = `${poolName}-${cleaned}`;
  if (cleaned === instanceID && plain.length <= MAX_NAME && cleaned !== "") return plain;
  const hash = shortHash(`instance:${instanceID}`).slice(0, 8);
  const head = plain.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, "");
  return `${head}-${hash}`;
}

/** Whether an object has a deletion timestamp. */
export function isDeleting(obj: { metadata?: { deletionTimestamp?: unknown } }): boolean {
  return Boolean(obj.metadata?.deletionTimestamp);
}

/** Everything {@link desiredInfraMachine} needs to know about the pool. */
export interface InfraMachineOwner {
  /** The pool's apiVersion, kind, name, namespace and UID (the owner reference). */
  readonly pool: {
    readonly apiVersion: string;
    readonly kind: string;
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
  };
  /** The owner MachinePool's name (its formatted value is the pool-name label). */
  readonly machinePoolName: string;
  /** The Cluster's name. */
  readonly clusterName: string;
  /** The pool's watch-filter label value, copied so a filtered manager still sees the object. */
  readonly watchFilter?: string | undefined;
}

/**
 * The InfraMachine the kit creates for an instance: labels core selects by, a non-controller owner
 * reference to the pool (the Machine controller adds itself as controller), the kit's finalizer
 * and the instance's providerID. Never called for an instance without a providerID.
 *
 * @example
 * ```ts
 * const im = desiredInfraMachine(FooMachinePool.machine, owner, instance);
 * ```
 */
export function desiredInfraMachine(
  kind: InfraMachineKind,
  owner: InfraMachineOwner,
  instance: PoolInstance,
): InfraMachineObject {
  if (instance.providerID === "") {
    throw new Error(`instance ${instance.id} has no providerID yet: it gets no InfraMachine`);
  }
  const labels: Record<string, string> = {
    [Labels.ClusterName]: owner.clusterName,
    [Labels.MachinePoolName]: formatLabelValue(owner.machinePoolName),
  };
  if (owner.watchFilter) labels[Labels.WatchFilter] = owner.watchFilter;
  return {
    apiVersion: `${kind.resource.group}/${kind.resource.version}`,
    kind: kind.kind,
    metadata: {
      name: infraMachineName(owner.pool.name, instance.id),
      namespace: owner.pool.namespace,
      labels,
      finalizers: [kind.finalizer],
      ownerReferences: [
        {
          apiVersion: owner.pool.apiVersion,
          kind: owner.pool.kind,
          name: owner.pool.name,
          uid: owner.pool.uid,
        },
      ],
    },
    spec: { providerID: instance.providerID, instanceID: instance.id },
  };
}

/** The `Ready` condition of an instance's InfraMachine, from its state. */
export function instanceReadyState(instance: PoolInstance): {
  status: "True" | "False";
  reason: string;
  message: string;
} {
  if (instance.state === "running" && instance.healthy !== false) {
    return { status: "True", reason: "Ready", message: "" };
  }
  if (instance.state === "running") {
    return {
      status: "False",
      reason: "InstanceUnhealthy",
      message: `instance ${instance.id} fails the cloud's health check`,
    };
  }
  const reasons: Record<string, string> = {
    pending: "InstancePending",
    stopping: "InstanceStopped",
    stopped: "InstanceStopped",
    failed: "InstanceFailed",
    terminating: "InstanceTerminating",
    terminated: "InstanceTerminating",
  };
  return {
    status: "False",
    reason: reasons[instance.state] ?? "InstanceNotReady",
    message: `instance ${instance.id} is ${instance.state}`,
  };
}

/**
 * The InfraMachine's status for an instance, without conditions: provisioned once it runs (and
 * from then on), its state, zone, addresses and whether it is up to date.
 */
export function infraMachineStatus(
  instance: PoolInstance,
  upToDate: boolean,
  previous: InfraMachineObject["status"],
): NonNullable<InfraMachineObject["status"]> {
  const provisioned =
    previous?.initialization?.provisioned === true || instance.state === "running";
  const status: NonNullable<InfraMachineObject["status"]> = {
    ready: provisioned,
    initialization: { provisioned },
    instanceState: instance.state,
    upToDate,
  };
  if (instance.zone) status.failureDomain = instance.zone;
  if (instance.interruptible === true) status.interruptible = true;
  if (instance.addresses && instance.addresses.length > 0) {
    status.addresses = instance.addresses.map((a) => ({ type: a.type, address: a.address }));
  }
  return status;
}

/** The Machine of each InfraMachine (core names it after the InfraMachine and refers to it by name). */
export function machinesByInfraMachine(
  kind: string,
  machines: readonly Machine[],
): Map<string, Machine> {
  const map = new Map<string, Machine>();
  for (const machine of machines) {
    const ref = machine.spec?.infrastructureRef;
    if (ref?.kind === kind && ref.name) map.set(ref.name, machine);
  }
  return map;
}

/** Whether a Machine asks to go first (`cluster.x-k8s.io/delete-machine`, presence only). */
export function hasDeletePriority(machine: Machine | undefined): boolean {
  return machine?.metadata?.annotations?.[Annotations.DeleteMachine] !== undefined;
}

function conditionOf(machine: Machine, type: string) {
  return machine.status?.conditions?.find((c) => c.type === type);
}

/**
 * Where a Machine stands in MachineHealthCheck remediation, read as core's MachineSet reads it
 * (`collections.IsUnhealthyAndOwnerRemediated`, and its clean-up of Machines found healthy again):
 * - `waiting`: unhealthy and marked for its owner, not being deleted — the kit's turn;
 * - `inFlight`: being deleted after the kit marked it `MachineDeleting`;
 * - `recovered`: healthy again but still marked — the kit removes the mark;
 * - `undefined`: none of these.
 */
export function remediationOf(
  machine: Machine | undefined,
): "waiting" | "inFlight" | "recovered" | undefined {
  if (!machine) return undefined;
  const owner = conditionOf(machine, RemediationConditions.OwnerRemediated);
  if (owner?.status !== "False") return undefined;
  if (isDeleting(machine)) {
    return owner.reason === OwnerRemediatedReasons.MachineDeleting ? "inFlight" : undefined;
  }
  const health = conditionOf(machine, RemediationConditions.HealthCheckSucceeded);
  if (health?.status === "False") return "waiting";
  if (health?.status === "True") return "recovered";
  return undefined;
}
