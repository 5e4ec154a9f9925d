import { KubeClient } from "../runtime/client.js";
import { isKubeconfigSource, type KubeconfigSource } from "../runtime/credentials.js";
import { ApiError } from "../runtime/errors.js";
import type { ObjectKey, ResourceDescriptor } from "../runtime/resource.js";

/**
 * Where the patch helper sends an object: the runtime's {@link ResourceDescriptor}, of which only
 * `group`, `version` and `plural` are required (the URL is `/apis/<group>/<version>/…/<plural>`, or
 * `/api/<version>/…` for the core group `""`). Generated resource metadata (`MachinePoolResource`, …),
 * `defineInfraMachinePool(...).resource`, the runtime's core constants (`SecretResource`, …) and a plain
 * `{ group, version, plural }` all fit. Whether the kind is namespaced is taken from the object itself.
 *
 * @example
 * ```ts
 * const ref: ResourceRef = { group: "infrastructure.example.com", version: "v1beta2", plural: "foomachinepools" };
 * PatchHelper.snapshot(pool, { resource: ref });
 * PatchHelper.snapshot(secret, { resource: SecretResource });
 * ```
 */
export type ResourceRef = Pick<ResourceDescriptor, "group" | "version" | "plural"> &
  Partial<ResourceDescriptor>;

/** A Kubernetes object as JSON: what the transport sends and receives. */
export interface KubeObject {
  /** `group/version`. */
  apiVersion?: string;
  /** The object's kind, e.g. `FooMachinePool`. */
  kind?: string;
  /**
   * Name, namespace, identity and versioning fields; any other metadata passes through untouched.
   */
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
 * The small surface the patch helper needs from a Kubernetes client: the seam for using a client
 * other than the runtime's {@link KubeClient} (or for recording writes, as the test kit's CAPI
 * emulator does). Errors must carry the HTTP status so that conflicts (409) and NotFound (404) are
 * recognised: the runtime's `ApiError`s do, and so does any error with a numeric `status` or `code`
 * (see {@link httpStatusOf}).
 *
 * @example
 * ```ts
 * const transport: PatchTransport = {
 *   get: (resource, namespace, name) => myClient.get(resource, namespace, name),
 *   patch: (resource, namespace, name, body, contentType, subresource) =>
 *     myClient.patch(resource, namespace, name, body, contentType, subresource),
 * };
 * await PatchHelper.snapshot(pool).apply(transport, pool);
 * ```
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

/**
 * What the patch helper writes through: the runtime's {@link KubeClient} (typed errors, and its writes
 * feed the informer cache's read-your-own-writes), a kubeconfig (the SDK's `Kubeconfig` or
 * client-node's `KubeConfig`: a `KubeClient` is made for it, one per kubeconfig), or a {@link PatchTransport} of your own.
 */
export type PatchClient = KubeClient | KubeconfigSource | PatchTransport;

/**
 * The HTTP status of an error thrown by a transport, when it has one: the `code` of the runtime's
 * `ApiError` (`undefined` when no response arrived), else a numeric `status` or `code` on the error
 * (client-node's `ApiException`, a custom transport's errors).
 *
 * @example
 * ```ts
 * try { await client.get(SecretResource, key); }
 * catch (error) { if (httpStatusOf(error) !== 404) throw error; }
 * ```
 */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof ApiError) return error.code === 0 ? undefined : error.code;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === "number") return status;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

/** The JSON merge patch content type. */
export const MERGE_PATCH = "application/merge-patch+json";
const JSON_PATCH = "application/json-patch+json";

// The helper addresses by the object's own namespace, so that decides the scope (not the descriptor).
function descriptorOf(resource: ResourceRef, namespace: string | undefined): ResourceDescriptor {
  return {
    ...resource,
    kind: resource.kind ?? resource.plural,
    scope: namespace !== undefined ? "Namespaced" : "Cluster",
  };
}

function keyOf(namespace: string | undefined, name: string): ObjectKey {
  return namespace === undefined ? { name } : { namespace, name };
}

function kubeClientTransport(client: KubeClient): PatchTransport {
  return {
    async get(resource, namespace, name) {
      return (await client.get(
        descriptorOf(resource, namespace),
        keyOf(namespace, name),
      )) as KubeObject;
    },
    async patch(resource, namespace, name, body, contentType, subresource) {
      const descriptor = descriptorOf(resource, namespace);
      const key = keyOf(namespace, name);
      if (contentType === MERGE_PATCH) {
        return (await (subresource === "status"
          ? client.mergePatchStatus(descriptor, key, body)
          : client.mergePatch(descriptor, key, body))) as KubeObject;
      }
      if (contentType === JSON_PATCH) {
        const operations = body as Parameters<KubeClient["jsonPatch"]>[2];
        return (await (subresource === "status"
          ? client.jsonPatchStatus(descriptor, key, operations)
          : client.jsonPatch(descriptor, key, operations))) as KubeObject;
      }
      throw new TypeError(
        `the KubeClient patch transport does not send ${contentType}; use ${MERGE_PATCH} or ${JSON_PATCH}`,
      );
    },
  };
}

const byClient = new WeakMap<KubeClient, PatchTransport>();
const byKubeConfig = new WeakMap<KubeconfigSource, KubeClient>();

/**
 * The transport for what {@link PatchClient} the caller passed: a KubeClient's (cached per client), a
 * KubeClient made for a KubeConfig (cached per KubeConfig), or the caller's own transport.
 */
export function toTransport(target: PatchClient): PatchTransport {
  if (!(target instanceof KubeClient) && isKubeconfigSource(target)) {
    let client = byKubeConfig.get(target);
    if (!client) {
      client = new KubeClient(target);
      byKubeConfig.set(target, client);
    }
    return toTransport(client);
  }
  if (!(target instanceof KubeClient)) return target as PatchTransport;
  let transport = byClient.get(target);
  if (!transport) {
    transport = kubeClientTransport(target);
    byClient.set(target, transport);
  }
  return transport;
}
