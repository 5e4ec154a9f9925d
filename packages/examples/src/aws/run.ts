/**
 * The AWS reference provider's entry point: one Manager running `machinePoolController` with
 * {@link asgDriver}. The clients come from the caller: a `main` builds them from the environment's
 * region and credentials, a test from its moto test bed.
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
import { type AsgDriverOptions, type AwsClients, asgDriver } from "./driver.js";
import { ASGMachinePool } from "./kind.js";
import type { ASGMachinePoolSpec } from "./spec.js";

/** Options of {@link startAsgProvider}. */
export interface AsgProviderOptions {
  /** The management cluster. */
  kubeConfig: KubeConfig;
  /** The AWS clients (built with `maxAttempts: 1`: see {@link asgDriver}). */
  clients: AwsClients;
  /** Manager name (field manager, leader-election identity). Default `asg-provider`. */
  name?: string;
  /** Logger, or options to create one. */
  logger?: RuntimeLogger | LoggerOptions;
  /** Driver options (zones, busy retry). */
  driver?: AsgDriverOptions;
  /** Controller tuning (poll and resync periods, strategy, readiness). */
  controller?: Partial<Omit<MachinePoolControllerOptions<ASGMachinePoolSpec>, "manager" | "kind">>;
}

/** A running AWS provider. */
export interface RunningAsgProvider {
  /** The manager. */
  readonly manager: Manager;
  /** Stops the controller and waits for in-flight reconciles. */
  stop(): Promise<void>;
}

/**
 * Starts the `ASGMachinePool` provider and resolves once it leads and its caches are synced.
 *
 * @example
 * ```ts
 * const config = { region: "eu-west-1", maxAttempts: 1 };
 * const provider = await startAsgProvider({
 *   kubeConfig,
 *   clients: { ec2: new EC2Client(config), autoScaling: new AutoScalingClient(config) },
 * });
 * ```
 */
export async function startAsgProvider(options: AsgProviderOptions): Promise<RunningAsgProvider> {
  const manager = new Manager({
    kubeConfig: options.kubeConfig,
    name: options.name ?? "asg-provider",
    gracefulShutdownTimeoutMs: 2000,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  machinePoolController(asgDriver(options.clients, options.driver), {
    ...options.controller,
    manager,
    kind: ASGMachinePool,
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
