/**
 * In-memory MachinePool Machines for unit tests of the kit's `machines` phase: InfraMachines, Machines
 * and a little of core's Machine controller. Not part of the public API.
 *
 * @module
 */
import type { Machine } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { InfraMachineObject } from "../crd/machine.js";
import type { InfraMachineKind, PoolMachinesApi } from "./machines.js";

/** The InfraMachine kind of the fake pool kind. */
export const fakeMachineKind: InfraMachineKind = {
  kind: "FakeMachinePoolMachine",
  resource: {
    group: "infrastructure.cluster.x-k8s.io",
    version: "v1beta2",
    plural: "fakemachinepoolmachines",
    kind: "FakeMachinePoolMachine",
    scope: "Namespaced",
    subresources: { status: true },
  },
  finalizer: "fakemachinepoolmachine.infrastructure.cluster.x-k8s.io",
};

/**
 * InfraMachines and Machines in memory, with a little of core: {@link FakeMachines.adopt} makes a
 * Machine per InfraMachine, a deleted object with finalizers gets a deletion timestamp, and
 * {@link FakeMachines.drain} plays the Machine controller's deletion of the InfraMachine.
 */
export interface FakeMachines {
  /** InfraMachines by name. */
  readonly infraMachines: Map<string, InfraMachineObject>;
  /** Machines by name. */
  readonly machines: Map<string, Machine>;
  /** Every write, as `verb kind/name`. */
  readonly writes: string[];
  /** The API the kit's phases use. */
  readonly api: PoolMachinesApi;
  /** Core's MachinePool controller: a Machine (same name) for every InfraMachine without one. */
  adopt(annotations?: Record<string, Record<string, string>>): void;
  /** Core's Machine controller after a drain: each deleting Machine deletes its InfraMachine. */
  drain(): void;
  /**
   * A MachineHealthCheck finding a Machine unhealthy (`HealthCheckSucceeded=False`,
   * `OwnerRemediated=False` with `WaitingForRemediation`), or healthy again (`healthy: true`:
   * `HealthCheckSucceeded=True`, the owner's mark left as it is).
   */
  healthCheck(name: string, healthy: boolean): void;
}

function setMachineCondition(
  machine: Machine,
  type: string,
  condition: { status: "True" | "False"; reason: string; message: string } | undefined,
): void {
  const others = (machine.status?.conditions ?? []).filter((c) => c.type !== type);
  const conditions = condition
    ? [...others, { type, ...condition, lastTransitionTime: "2026-01-01T00:00:00Z" }]
    : others;
  machine.status = { ...machine.status, conditions };
}

/** In-memory MachinePool Machines for unit tests of the `machines` phase. */
export function fakeMachines(): FakeMachines {
  const infraMachines = new Map<string, InfraMachineObject>();
  const machines = new Map<string, Machine>();
  const writes: string[] = [];
  const now = "2026-01-01T00:00:00Z";
  const deleteObject = <
    T extends { metadata?: { finalizers?: string[]; deletionTimestamp?: unknown } },
  >(
    store: Map<string, T>,
    name: string,
  ) => {
    const obj = store.get(name);
    if (!obj) return;
    if ((obj.metadata?.finalizers ?? []).length > 0) {
      obj.metadata = { ...obj.metadata, deletionTimestamp: now };
    } else store.delete(name);
  };
  const api: PoolMachinesApi = {
    async list() {
      return {
        infraMachines: [...infraMachines.values()].map((im) => structuredClone(im)),
        machines: [...machines.values()].map((m) => structuredClone(m)),
      };
    },
    async create(im) {
      const name = im.metadata?.name ?? "";
      writes.push(`create InfraMachine/${name}`);
      if (infraMachines.has(name)) return;
      infraMachines.set(
        name,
        structuredClone({ ...im, metadata: { ...im.metadata, uid: `uid-${name}` } }),
      );
    },
    async writeStatus(im, status) {
      const name = im.metadata?.name ?? "";
      writes.push(`status InfraMachine/${name}`);
      const stored = infraMachines.get(name);
      if (stored) stored.status = structuredClone(status);
    },
    async removeFinalizer(im) {
      const name = im.metadata?.name ?? "";
      writes.push(`unfinalize InfraMachine/${name}`);
      const stored = infraMachines.get(name);
      if (!stored?.metadata) return;
      stored.metadata.finalizers = (stored.metadata.finalizers ?? []).filter(
        (f) => f !== fakeMachineKind.finalizer,
      );
      if (stored.metadata.deletionTimestamp && stored.metadata.finalizers.length === 0) {
        infraMachines.delete(name);
      }
    },
    async delete(im) {
      const name = im.metadata?.name ?? "";
      writes.push(`delete InfraMachine/${name}`);
      deleteObject(infraMachines, name);
    },
    async deleteMachine(machine) {
      const name = machine.metadata?.name ?? "";
      writes.push(`delete Machine/${name}`);
      deleteObject(machines, name);
    },
    async exists(_namespace, name) {
      return infraMachines.has(name);
    },
    async writeOwnerRemediated(machine, state) {
      const name = machine.metadata?.name ?? "";
      writes.push(`ownerRemediated Machine/${name} ${state?.reason ?? "removed"}`);
      const stored = machines.get(name);
      if (!stored) return;
      setMachineCondition(stored, "OwnerRemediated", state && { status: "False", ...state });
    },
  };
  return {
    infraMachines,
    machines,
    writes,
    api,
    adopt(annotations = {}) {
      for (const name of infraMachines.keys()) {
        if (machines.has(name)) continue;
        machines.set(name, {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "Machine",
          metadata: {
            name,
            namespace: "default",
            finalizers: ["machine.cluster.x-k8s.io"],
            ...(annotations[name] ? { annotations: annotations[name] } : {}),
          },
          spec: {
            clusterName: "c1",
            bootstrap: { dataSecretName: "" },
            infrastructureRef: {
              apiGroup: fakeMachineKind.resource.group,
              kind: fakeMachineKind.kind,
              name,
            },
          },
        } as unknown as Machine);
      }
    },
    healthCheck(name, healthy) {
      const machine = machines.get(name);
      if (!machine) throw new Error(`healthCheck: no Machine ${name}`);
      setMachineCondition(machine, "HealthCheckSucceeded", {
        status: healthy ? "True" : "False",
        reason: healthy ? "HealthCheckSucceeded" : "UnhealthyNode",
        message: healthy ? "" : "Condition Ready on Node is reporting status False",
      });
      if (!healthy && !machine.status?.conditions?.some((c) => c.type === "OwnerRemediated")) {
        setMachineCondition(machine, "OwnerRemediated", {
          status: "False",
          reason: "WaitingForRemediation",
          message: "Waiting for remediation",
        });
      }
    },
    drain() {
      for (const [name, machine] of machines) {
        if (!machine.metadata?.deletionTimestamp) continue;
        const ref = machine.spec?.infrastructureRef?.name ?? "";
        if (infraMachines.has(ref)) deleteObject(infraMachines, ref);
        else machines.delete(name);
      }
    },
  };
}
