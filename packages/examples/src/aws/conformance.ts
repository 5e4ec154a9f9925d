/**
 * How the AWS reference provider plugs into the conformance suite: started against the suite's API
 * server with SDK clients on a moto test bed, the suite reading the truth from moto directly.
 *
 * @module
 */
import { type MachinePoolControllerOptions, Manager, machinePoolController } from "@capi-ts/sdk";
import {
  type ConformancePool,
  type ConformanceProvider,
  kubeletStandIn,
  type MachinePoolConformanceOptions,
} from "@capi-ts/testing";
import { asgDriver, asgResourceName } from "./driver.js";
import { ASGMachinePool, asgKind } from "./kind.js";
import type { ASGMachinePoolSpec } from "./spec.js";
import { followMotoInstances, type MotoTestBed, startMotoTestBed } from "./testbed.js";

/** Options of {@link asgConformance}. */
export interface AsgConformanceOptions {
  /** Controller tuning. */
  controller?: Partial<Omit<MachinePoolControllerOptions<ASGMachinePoolSpec>, "manager" | "kind">>;
  /** Suite options to override (scenarios, timeouts, core). */
  suite?: Partial<MachinePoolConformanceOptions>;
  /**
   * MachinePool Machines: the kit keeps an `ASGMachinePoolMachine` per instance and deletes
   * instances through core's Machines; the suite adds its MachinePool Machines scenarios.
   */
  machinePoolMachines?: boolean;
  /** Called with the test bed once it runs (a test reads moto's version or the calls from it). */
  onTestBed?: (bed: MotoTestBed) => void;
}

const group = (pool: ConformancePool): string => asgResourceName({ ...pool, uid: "" });

/** An AMI ID: moto launches any. */
const IMAGE = "ami-0123456789abcdef0";

/**
 * Conformance options for `ASGMachinePool` on moto: pass them to `runMachinePoolConformance`.
 * Needs moto (`./dev moto --install`, see `findMoto`).
 *
 * @example
 * ```ts
 * runMachinePoolConformance(asgConformance());
 * ```
 */
export function asgConformance(options: AsgConformanceOptions = {}): MachinePoolConformanceOptions {
  const identity = "asg-provider";
  const kind = asgKind({ machinePoolMachines: options.machinePoolMachines ?? false });
  return {
    name: `${ASGMachinePool.kind} on moto${options.machinePoolMachines ? " with MachinePool Machines" : ""}`,
    kind,
    poolSpec: { instanceType: "t3.small", imageId: IMAGE, minSize: 0, maxSize: 10 },
    templateChange: (spec) => ({ ...spec, instanceType: "t3.medium" }),
    // The pool's spec names its AMI: a Kubernetes version change alone rolls nothing.
    versionRollout: false,
    // Another size and architecture: what the autoscaler reads of an empty pool changes with it.
    capacityChange: (spec) => ({ ...spec, instanceType: "m6g.medium" }),
    async startProvider(env): Promise<ConformanceProvider> {
      const bed = await startMotoTestBed();
      options.onTestBed?.(bed);
      // The suite's pools run v1.34.1 and name one AMI: the kubelet it boots reports that version
      // (core's topology controller waits for it before it calls a topology Cluster reconciled).
      const kubelet = kubeletStandIn({
        kubeConfig: env.workloadKubeConfig,
        kubeletVersion: "v1.34.1",
      });
      const follower = followMotoInstances({
        bed,
        kubelet,
        canJoin: (userData) => env.isTokenValid(userData),
      });
      const manager = new Manager({
        kubeConfig: env.kubeConfig,
        name: identity,
        logger: { level: "silent" },
        watchFilterValue: env.watchFilterValue,
        gracefulShutdownTimeoutMs: 2000,
      });
      machinePoolController(
        asgDriver(bed.providerClients(), {
          defaultZones: ["us-east-1a", "us-east-1b"],
          busyRetryMs: 100,
        }),
        {
          pollIntervalMs: 50,
          resyncPeriodMs: 500,
          // An instance counts once its Node is Ready, so a rollout never drops Ready Nodes.
          readiness: "node",
          ...options.controller,
          manager,
          kind,
        },
      );
      const running = manager.start();
      await manager.elected();
      return {
        identity,
        cloud: {
          liveProviderIds: async (pool) =>
            (await bed.instances(group(pool))).map((i) => i.providerID),
          callCount: (filter = {}) =>
            bed.calls.filter(
              (c) =>
                (filter.mutating === undefined || c.mutating === filter.mutating) &&
                (!filter.resizes || c.resizes),
            ).length,
          failedCallCount: () => bed.failedCalls,
          outdatedProviderIds: async (pool) => {
            const latest = (await bed.template(group(pool)))?.latest;
            return (await bed.instances(group(pool)))
              .filter((i) => i.version !== String(latest))
              .map((i) => i.providerID);
          },
          groupBounds: async (pool) => {
            const found = await bed.group(group(pool));
            return found && { min: found.min, max: found.max };
          },
          templateVersionCount: async (pool) => (await bed.template(group(pool)))?.latest ?? 0,
          resourcesLeft: async (pool) => [
            ...((await bed.group(group(pool))) ? [`group ${group(pool)}`] : []),
            ...((await bed.template(group(pool))) ? [`launch template ${group(pool)}`] : []),
            ...(await bed.instances(group(pool))).map((i) => `instance ${i.providerID}`),
          ],
          actors: {
            setDesiredReplicas: (pool, replicas) => bed.setDesiredCapacity(group(pool), replicas),
            // EC2's own terminate, as a user does it; the group replaces the instance, as on AWS.
            terminateInstance: (_pool, providerID) =>
              bed.terminateInstance(providerID.slice(providerID.lastIndexOf("/") + 1)),
            // No spot in this provider's spec: the spot scenarios are skipped.
            throttle: (calls) => bed.throttle(calls),
            setNodeJoinDelay: (ms) => follower.setJoinDelay(ms),
          },
        },
        async stop() {
          await manager.stop();
          await running.catch(() => undefined);
          await follower.stop();
          kubelet.stop();
          await bed.stop();
        },
      };
    },
    timeouts: { steadyStateMs: 800, settleMs: 250 },
    ...options.suite,
  };
}
