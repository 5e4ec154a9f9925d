/**
 * The capi-ts SDK for Cluster API InfraMachinePool providers — the provider author's path: implement a
 * {@link PoolDriver} for the cloud and run it with the kit ({@link machinePoolController}) in a
 * {@link Manager} configured from the standard flags ({@link parseManagerFlags}). The kind is defined
 * with `defineInfraMachinePool` of `@capi-ts/sdk/crd` (zod schemas of the provider's fields).
 *
 * Everything else lives on a subpath, so a provider's editor and type checker load only what it uses:
 *
 * | subpath | what |
 * | --- | --- |
 * | `@capi-ts/sdk/runtime` | controller runtime: client, informers, cache, work queue, controllers, predicates, errors, leader election, metrics |
 * | `@capi-ts/sdk/provider` | the whole provider kit: phases, pool scope, strategy planning, error policy, test doubles |
 * | `@capi-ts/sdk/crd` | the kind: `defineInfraMachinePool`, `machinePoolStrategySchema`, zod → structural schema |
 * | `@capi-ts/sdk/contract` | InfraMachinePool contract helpers (owners, pause, finalizers, bootstrap data, status) and what a CAPI controller adds to the runtime's watches (watch-filter and paused predicates, cluster-name index) |
 * | `@capi-ts/sdk/clustercache` | workload cluster access (`ClusterCache`: a client and a Node informer per workload cluster, through `<cluster>-kubeconfig`), for the kit and a provider's own controllers |
 * | `@capi-ts/sdk/patch` | the patch helper (diff + merge patch with optimistic locking) |
 * | `@capi-ts/sdk/conditions` | v1beta2 and v1beta1 conditions |
 * | `@capi-ts/sdk/webhook` | admission webhooks served by the manager over TLS |
 * | `@capi-ts/sdk/manifests` | what a provider ships: `infrastructure-components.yaml`, `metadata.yaml` |
 * | `@capi-ts/sdk/api` | every generated CAPI type, one namespace per group and version |
 * | `@capi-ts/sdk/api/<group>/<version>` | one group and version, e.g. `@capi-ts/sdk/api/cluster.x-k8s.io/v1beta2` |
 *
 * @example
 * ```ts
 * import { Manager, machinePoolController, managerOptionsFromFlags, parseManagerFlags } from "@capi-ts/sdk";
 *
 * const flags = parseManagerFlags(process.argv.slice(2));
 * const manager = new Manager({ ...managerOptionsFromFlags(flags), name: "foo-provider" });
 * machinePoolController(fooDriver, { manager, kind: FooMachinePool });
 * await manager.start();
 * ```
 *
 * @packageDocumentation
 */

/** The package version. */
export const version = "0.2.1";

export type {
  InfraMachinePoolContractSpec,
  InfraMachinePoolContractStatus,
  InfraMachinePoolDefinition,
  InfraMachinePoolInput,
  InfraMachinePoolObject,
  Manifest,
  PrinterColumn,
} from "./crd/index.js";
export {
  type InfraMachinePoolKind,
  type MachinePoolControllerOptions,
  machinePoolController,
  type PoolReason,
  PoolReasons,
} from "./provider/controller.js";
export {
  type CredentialsRequest,
  CredentialsUnavailableError,
  type PoolCredentials,
} from "./provider/credentials.js";
export {
  type AnyPoolDriver,
  assertPoolOwns,
  type BootstrapDataStore,
  type CapacityResources,
  type CredentialsOf,
  classifyDriverError,
  DEFAULT_MOVE_BLOCKING_CALLS,
  type DeleteMode,
  DriverError,
  type DriverFailure,
  type DriverFailureKind,
  type GroupBounds,
  type GroupIntent,
  type GroupModelPoolDriver,
  type GroupUpdate,
  type InfrastructureClusterObject,
  type InfrastructureClusterOf,
  MoveAnnotations,
  type NativeRollout,
  type NewTemplateVersion,
  type NodeArchitecture,
  type NodeOperatingSystem,
  OWNER_TAG_PREFIX,
  type PoolAccess,
  type PoolCallContext,
  type PoolCapacity,
  type PoolContext,
  type PoolDriver,
  type PoolEnvironment,
  type PoolGroup,
  type PoolGroupStatus,
  type PoolIdentity,
  type PoolInstance,
  type PoolInstanceState,
  type PoolModelLocation,
  type PoolNodeInfo,
  poolOwnerTags,
  type RolloutOptions,
  type RolloutStatus,
  TEMPLATE_STAMP_TAG_KEYS,
  type TemplateStamp,
  type TemplateVersion,
  templateStampFromTags,
  templateStampToTags,
  type UserDataOptions,
} from "./provider/driver.js";
export {
  DEFAULT_STRATEGY,
  type DeletePolicy,
  type IntOrPercent,
  type MachinePoolStrategy,
  type StrategyType,
} from "./provider/strategy.js";
export type { KubeconfigSource } from "./runtime/credentials.js";
export {
  HelpRequested,
  type ManagerFlags,
  managerFlagsCommand,
  managerOptionsFromFlags,
  parseManagerFlags,
} from "./runtime/flags.js";
export type { HealthCheck } from "./runtime/health-checks.js";
export { Kubeconfig, loadKubeconfig } from "./runtime/kubeconfig-loader.js";
export { createLogger, type LoggerOptions, type RuntimeLogger } from "./runtime/logging.js";
export { Manager } from "./runtime/manager.js";
export type {
  ManagerLeaderElectionOptions,
  ManagerOptions,
} from "./runtime/manager-options.js";
export { REDACTED, registerSecret } from "./runtime/redact.js";
export type { Runnable } from "./runtime/runnable.js";
