/**
 * In-memory Kubernetes API server for tests and demos: a real HTTP server on 127.0.0.1 that
 * `@kubernetes/client-node` (and kubectl) talk to unmodified. See {@link startApiServer}.
 *
 * Known limitations (differences from kube-apiserver):
 * - No conversion between CRD versions: an object stored in one version is served in every other
 *   served version with only `apiVersion` rewritten (as with `conversion: None`).
 * - `limit`/`continue` pages over the current state, not a snapshot at the first page's
 *   resourceVersion; continue tokens never expire.
 * - No authentication or authorization (any token is accepted), no admission webhooks, no aggregated
 *   discovery (`/apis` answers the legacy format), no protobuf, no `/scale` subresource, no table output.
 * - Watches send BOOKMARKs on a fixed interval; slow watchers (64 MiB unsent) are closed.
 * - Built-in kinds: Namespace, Secret, ConfigMap, Node, Event (core and events.k8s.io), Lease and
 *   CustomResourceDefinition only, validated on metadata (names, labels, owner references), not on
 *   their full built-in schemas.
 * - Garbage collection and namespace termination run right after the triggering write (in the same
 *   process tick batch), faster than the real controllers.
 *
 * @packageDocumentation
 */

import "./engines.js";

export type { StatusBody, StatusDetails } from "./errors.js";
export type { FaultHandle, FaultMatch, FaultRule, Faults } from "./faults.js";
export type { RequestRecord } from "./http.js";
export type {
  ApiServer,
  ApiServerOptions,
  CrdSource,
  RequestFilter,
} from "./server.js";
export { startApiServer } from "./server.js";
export type { KubeObject, ObjectMeta, OwnerReference } from "./types.js";
