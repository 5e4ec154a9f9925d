export {
  InformerCache,
  type InformerCacheOptions,
  type KindCacheOptions,
  type SharedInformerDefaults,
} from "./cache.js";
export { KubeClient } from "./client.js";
export {
  type ApplyOptions,
  DEFAULT_MAX_CONNECTIONS_PER_SERVER,
  type DeleteOptions,
  type HttpVerb,
  type JsonPatchOperation,
  type KubeClientOptions,
  type ListOptions,
  type ObjectList,
  type RawRequest,
  type WatchEvent,
  type WatchOptions,
  type WriteKind,
  type WriteListener,
  type WriteOptions,
} from "./client-types.js";
export { type Clock, ManualClock, systemClock } from "./clock.js";
export {
  Controller,
  type ControllerHost,
  type ControllerOptions,
  type MapFunc,
  type ReconcileContext,
  type ReconcileResult,
  type Reconciler,
} from "./controller.js";
export { ControllerBuilder, type SourceOptions } from "./controller-builder.js";
export {
  type ExecResult,
  isKubeconfigSource,
  type KubeconfigSource,
  parseExecCredential,
  type ResolvedCredentials,
  resolveCredentials,
  type TlsMaterial,
} from "./credentials.js";
export {
  DEFAULT_DIAGNOSTICS_LIMITS,
  type DiagnosticsLimits,
} from "./diagnostics.js";
export { parseGoDuration } from "./duration.js";
export {
  AlreadyExistsError,
  ApiError,
  type ApiStatus,
  BadRequestError,
  ConflictError,
  ConnectionError,
  errorFromStatus,
  FencedError,
  ForbiddenError,
  GoneError,
  InvalidError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  LeaderElectionLostError,
  NotFoundError,
  ReconcileTimeoutError,
  type RequestInfo,
  ResponseTooLargeError,
  ServerError,
  type StatusCause,
  TerminalError,
  TimeoutError,
  TlsMaterialError,
  TooManyRequestsError,
  UnauthorizedError,
} from "./errors.js";
export { EventRecorder, type EventRecorderOptions, type EventType } from "./events.js";
export {
  type ManagerFlags,
  managerFlagsCommand,
  managerOptionsFromFlags,
  parseManagerFlags,
} from "./flags.js";
export type { HealthCheck } from "./health-checks.js";
export { Informer } from "./informer.js";
export {
  type BackoffOptions,
  type IndexFunc,
  type InformerEventMeta,
  type InformerHandler,
  type InformerMetrics,
  type InformerOptions,
  indexByOwnerUID,
  OWNER_UID_INDEX,
} from "./informer-types.js";
export {
  inClusterKubeconfig,
  Kubeconfig,
  type KubeconfigCluster,
  type KubeconfigContext,
  type KubeconfigExec,
  type KubeconfigInit,
  type KubeconfigUser,
  kubeconfigFromFiles,
  type LoadKubeconfigOptions,
  loadKubeconfig,
  SERVICE_ACCOUNT_DIR,
} from "./kubeconfig-loader.js";
export { type LabelSelector, parseLabelSelector } from "./labels.js";
export { type LeaderElectionOptions, LeaderElector } from "./leaderelection.js";
export {
  type EventLoopBlock,
  EventLoopMonitor,
  type EventLoopMonitorOptions,
} from "./liveness.js";
export { createLogger, type LoggerOptions, type RuntimeLogger, silentLogger } from "./logging.js";
export { Manager } from "./manager.js";
export type { ManagerLeaderElectionOptions, ManagerOptions } from "./manager-options.js";
export {
  CounterFamily,
  type CounterSeries,
  type GaugeDefinition,
  GaugeFamily,
  type GaugeSeries,
  type HistogramDefinition,
  HistogramFamily,
  type HistogramSeries,
  type LabelValues,
  type MetricDefinition,
  MetricFamily,
  type MetricSample,
} from "./metric-families.js";
export {
  type ControllerMetrics,
  type ReconcileOutcome,
  RuntimeMetrics,
} from "./metrics.js";
export {
  allPredicates,
  anyPredicate,
  evaluatePredicate,
  generationChanged,
  labelSelectorMatches,
  labelsChanged,
  negatePredicate,
  type Predicate,
  predicateFor,
  resourceVersionChanged,
} from "./predicates.js";
export {
  isQuantity,
  parseQuantity,
  QUANTITY_PATTERN,
  UNSIGNED_QUANTITY_PATTERN,
} from "./quantity.js";
export {
  type AddOptions,
  QueuePriority,
  WorkQueue,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "./queue.js";
export {
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  type ExponentialFailureOptions,
  ExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  type TokenBucketOptions,
  TokenBucketRateLimiter,
} from "./ratelimiter.js";
export {
  REDACTED,
  type RedactedError,
  redactError,
  redactText,
  redactValue,
  registerSecret,
} from "./redact.js";
export {
  apiVersionOf,
  ConfigMapResource,
  EventResource,
  hasStatusSubresource,
  isNamespaced,
  keyOfObject,
  LeaseResource,
  NamespaceResource,
  NodeResource,
  type ObjectKey,
  type ObjectOf,
  objectKeyString,
  parseObjectKey,
  type ResourceDescriptor,
  resourceId,
  resourcePath,
  SecretResource,
} from "./resource.js";
export type { Runnable } from "./runnable.js";
export { type SelfSignedCertificate, selfSignedCertificate } from "./selfsigned.js";
export { DEFAULT_SERVING_LIMITS, type ServingLimits } from "./serving.js";
export type { RawSource, ReconcileRequest } from "./source.js";
