/**
 * In-memory Kubernetes API server for tests and demos: a real HTTP server on 127.0.0.1 that
 * `@kubernetes/client-node` (and kubectl) talk to unmodified. See {@link startApiServer}.
 *
 * The same behaviour suite runs against it and against a real kube-apiserver; the differences found
 * and their verdicts are listed in the package's `DIVERGENCES.md`.
 *
 * Known limitations (differences from kube-apiserver):
 * - No conversion webhooks: an object stored in one CRD version is served in the others with only
 *   `apiVersion` rewritten, then pruned and defaulted by the target version's schema (what the real
 *   server does with `conversion: None`).
 * - `limit`/`continue` pages over the current state, not a snapshot at the first page's
 *   resourceVersion; continue tokens never expire (no 410 on `continue`). LIST ignores
 *   `resourceVersion`/`resourceVersionMatch` and always answers the latest state.
 * - No authentication or authorization (any token is accepted), no admission webhooks or
 *   ValidatingAdmissionPolicies, no aggregated discovery (clients fall back to the legacy format),
 *   no protobuf, no table output (`Accept: ...;as=Table`), no OpenAPI documents (`/openapi/v2|v3`).
 * - Built-in kinds are Namespace, Secret, ConfigMap, Node, Event (core and events.k8s.io), Lease and
 *   CustomResourceDefinition; their metadata is validated (names, labels, owner references,
 *   finalizers), not their full built-in schemas.
 * - Garbage collection and namespace termination run right after the triggering write, faster than
 *   kube-controller-manager would (a real API server alone has no such controllers at all).
 * - Watches send BOOKMARKs on a fixed interval (`bookmarkIntervalMs`); a watcher more than 64 MiB
 *   behind is closed. A watch from a resourceVersion newer than the server's starts from now
 *   instead of waiting.
 * - Field selectors: `metadata.name`, `metadata.namespace`, the kind's own fields (Secret `type`,
 *   Event `involvedObject.*`, `reason`, `type`, …) and a CRD's `selectableFields`.
 *
 * @packageDocumentation
 */

export type { AccessReviews, AccessUser, NonResourceGrant } from "./access.js";
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
