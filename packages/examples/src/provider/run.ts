/**
 * The example provider's entry point: one Manager running `machinePoolController` with the fake-cloud
 * driver. This is all the wiring a provider needs; the kit sets up the watches.
 *
 * @module
 */
import {
  type LoggerOptions,
  type MachinePoolControllerOptions,
  Manager,
  machinePoolController,
  type RuntimeLogger,
} from "@capi-ts/sdk";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ScalingCloudClient } from "../cloud/index.js";
import { type FakeCloudDriverOptions, fakeCloudDriver } from "./driver.js";
import { fakeCloudKind } from "./kind.js";
import type { FakeCloudMachinePoolSpec } from "./spec.js";

/** Options of {@link startFakeCloudProvider}. */
export interface FakeCloudProviderOptions {
  /** The management cluster. */
  kubeConfig: KubeConfig;
  /** The cloud to manage (e.g. `new FakeScalingCloud({ clock }).client`). */
  cloud: ScalingCloudClient;
  /** Manager name (field manager, leader-election identity). Default `fakecloud-provider`. */
  name?: string;
  /** Logger, or options to create one. Default: the manager's default logger. */
  logger?: RuntimeLogger | LoggerOptions;
  /** Driver options (zones, native rollout, busy retry). */
  driver?: FakeCloudDriverOptions;
  /**
   * MachinePool Machines: one `FakeCloudMachinePoolMachine` per instance, instances deleted through
   * core's Machines (see {@link fakeCloudKind}). Default false.
   */
  machinePoolMachines?: boolean;
  /** Controller tuning (poll and resync periods, strategy, readiness). */
  controller?: Partial<
    Omit<MachinePoolControllerOptions<FakeCloudMachinePoolSpec>, "manager" | "kind">
  >;
}

/** A running example provider. */
export interface RunningFakeCloudProvider {
  /** The manager (its client, cache and event recorder). */
  readonly manager: Manager;
  /** Stops the controller and waits for in-flight reconciles. */
  stop(): Promise<void>;
}

/**
 * Starts the `FakeCloudMachinePool` provider and resolves once it leads and its caches are synced.
 *
 * @example
 * ```ts
 * const cloud = new FakeScalingCloud({ clock: new RealClock({ speed: 20 }) });
 * const provider = await startFakeCloudProvider({ kubeConfig: api.kubeConfig, cloud: cloud.client });
 * // … create a Cluster, a MachinePool and its FakeCloudMachinePool
 * await provider.stop();
 * ```
 */
export async function startFakeCloudProvider(
  options: FakeCloudProviderOptions,
): Promise<RunningFakeCloudProvider> {
  const manager = new Manager({
    kubeConfig: options.kubeConfig,
    name: options.name ?? "fakecloud-provider",
    gracefulShutdownTimeoutMs: 2000,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  machinePoolController(fakeCloudDriver(options.cloud, options.driver), {
    ...options.controller,
    manager,
    kind: fakeCloudKind({ machinePoolMachines: options.machinePoolMachines ?? false }),
  });
  const running = manager.start();
  await Promise.race([manager.elected(), running]);
  return {
    manager,
    async stop() {
      await manager.stop();
      await running.catch(() => undefined);
    },
  };
}
