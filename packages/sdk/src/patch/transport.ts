import {
  ApiException,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";

/**
 * Where an object is served: `/apis/<group>/<version>/namespaces/<ns>/<plural>`. The generated CAPI API
 * exports this for every kind; a provider passes its own (see `defineInfraMachinePool`).
 */
export interface ResourceRef {
  /** API group, e.g. `infrastructure.cluster.x-k8s.io`. The core group (`""`) is not supported. */
  group: string;
  /** API version, e.g. `v1beta2`. */
  version: string;
  /** Lower-case plural resource name, e.g. `foomachinepools`. */
  plural: string;
}

/** A Kubernetes object as JSON: what the transport sends and receives. */
export interface KubeObject {
  /** `group/version`. */
  apiVersion?: string;
  /** Kind. */
  kind?: string;
  /** Object metadata. */
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
    [key: string]: unknown;
  };
  /** Any other field. */
  [key: string]: unknown;
}

/**
 * The small surface the patch helper needs from a Kubernetes client. Implement it to use another client;
 * {@link clientNodeTransport} is the `@kubernetes/client-node` implementation. Errors must be
 * {@link KubernetesApiError}s (or carry a numeric `status`) so conflicts (409) and NotFound (404) are recognised.
 */
export interface PatchTransport {
  /** GET one object; `namespace` undefined for cluster-scoped kinds. */
  get(resource: ResourceRef, namespace: string | undefined, name: string): Promise<KubeObject>;
  /** PATCH one object (or its `status` subresource) with a body of the given content type. */
  patch(
    resource: ResourceRef,
    namespace: string | undefined,
    name: string,
    body: unknown,
    contentType: string,
    subresource?: "status",
  ): Promise<KubeObject>;
}

/** An error answered by the API server, with its HTTP status and Kubernetes `reason`. */
export class KubernetesApiError extends Error {
  /** HTTP status code, e.g. 404, 409, 422. */
  readonly status: number;
  /** Kubernetes `Status.reason`, e.g. `NotFound`, `Conflict`, `Invalid`. */
  readonly reason: string | undefined;
  /** Creates the error. */
  constructor(status: number, reason: string | undefined, message: string) {
    super(message);
    this.name = "KubernetesApiError";
    this.status = status;
    this.reason = reason;
  }
}

/** The HTTP status of an error thrown by a transport, when it has one. */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof KubernetesApiError) return error.status;
  if (error instanceof ApiException) return error.code;
  const status = (error as { status?: unknown; code?: unknown } | null)?.status;
  if (typeof status === "number") return status;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

function translate(error: unknown, what: string): unknown {
  if (!(error instanceof ApiException)) return error;
  let reason: string | undefined;
  let message = `${what} failed with HTTP ${error.code}`;
  try {
    const body = JSON.parse(String(error.body)) as { reason?: string; message?: string };
    reason = body.reason;
    if (body.message)
      message = `${what} failed with HTTP ${error.code} (${body.reason}): ${body.message}`;
  } catch {
    // not a Kubernetes Status body; keep the generic message
  }
  return new KubernetesApiError(error.code, reason, message);
}

function checkGroup(resource: ResourceRef): void {
  if (!resource.group) {
    throw new Error(
      `resource ${resource.version}/${resource.plural} is in the core API group, which the client-node patch transport does not address; ` +
        "pass a PatchTransport of your own for core kinds",
    );
  }
}

/**
 * A {@link PatchTransport} over `@kubernetes/client-node`'s `CustomObjectsApi`, sending the content type
 * explicitly on every PATCH.
 *
 * @example
 * ```ts
 * const transport = clientNodeTransport(KubeConfig.fromDefault());
 * await PatchHelper.snapshot(pool).apply(transport, pool);
 * ```
 */
export function clientNodeTransport(kubeConfig: KubeConfig): PatchTransport {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  return {
    async get(resource, namespace, name) {
      checkGroup(resource);
      const what = `GET ${resource.plural}.${resource.group} ${namespace ? `${namespace}/` : ""}${name}`;
      try {
        const { group, version, plural } = resource;
        return (await (namespace
          ? api.getNamespacedCustomObject({ group, version, plural, namespace, name })
          : api.getClusterCustomObject({ group, version, plural, name }))) as KubeObject;
      } catch (error) {
        throw translate(error, what);
      }
    },
    async patch(resource, namespace, name, body, contentType, subresource) {
      checkGroup(resource);
      const what = `PATCH ${resource.plural}.${resource.group}${subresource ? `/${subresource}` : ""} ${
        namespace ? `${namespace}/` : ""
      }${name}`;
      const headers = setHeaderOptions("Content-Type", contentType);
      const { group, version, plural } = resource;
      try {
        if (namespace) {
          const request = { group, version, plural, namespace, name, body };
          return (await (subresource === "status"
            ? api.patchNamespacedCustomObjectStatus(request, headers)
            : api.patchNamespacedCustomObject(request, headers))) as KubeObject;
        }
        const request = { group, version, plural, name, body };
        return (await (subresource === "status"
          ? api.patchClusterCustomObjectStatus(request, headers)
          : api.patchClusterCustomObject(request, headers))) as KubeObject;
      } catch (error) {
        throw translate(error, what);
      }
    },
  };
}

const transports = new WeakMap<KubeConfig, PatchTransport>();

/** A transport for a KubeConfig (cached per KubeConfig) or the transport itself. */
export function toTransport(target: PatchTransport | KubeConfig): PatchTransport {
  if (!(target instanceof KubeConfig)) return target;
  let transport = transports.get(target);
  if (!transport) {
    transport = clientNodeTransport(target);
    transports.set(target, transport);
  }
  return transport;
}

/** The JSON merge patch content type. */
export const MERGE_PATCH: string = PatchStrategy.MergePatch;
