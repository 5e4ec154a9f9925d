import type {
  CoreV1Event,
  KubernetesObject,
  V1ConfigMap,
  V1Lease,
  V1Namespace,
  V1Node,
  V1Secret,
} from "@kubernetes/client-node";
import { pathSegmentNameProblem } from "./object-name.js";

/**
 * Everything the runtime needs to address a kind over REST without a discovery round-trip. It says
 * scope and subresources as a CRD does (`scope`, `subresources.status`), so the generated resource
 * metadata in `src/api` (`MachinePoolResource`, …) and `defineInfraMachinePool(…).resource` are
 * descriptors as they are, and a hand-written one reads like the CRD it stands for. Core kinds have
 * constants below ({@link SecretResource}, …).
 *
 * @example
 * ```ts
 * const WidgetResource: ResourceDescriptor<Widget> = {
 *   group: "example.com", version: "v1", kind: "Widget", plural: "widgets",
 *   scope: "Namespaced", subresources: { status: true },
 * };
 * const widget = await client.get(WidgetResource, { namespace: "default", name: "w" }); // typed Widget
 * const pool = await client.get(MachinePoolResource, { namespace: "ns", name: "p" });     // typed MachinePool
 * ```
 */
export interface ResourceDescriptor<T extends KubernetesObject = KubernetesObject> {
  /** API group; `""` for the core group. */
  readonly group: string;
  /** API version within the group, e.g. `v1beta2`. */
  readonly version: string;
  /** `kind` of the objects. */
  readonly kind: string;
  /** Lower-case plural used in URLs, e.g. `machinepools`. */
  readonly plural: string;
  /** `Namespaced` (objects live in a namespace) or `Cluster`, as a CRD's `spec.scope`. */
  readonly scope: "Namespaced" | "Cluster";
  /**
   * The version's subresources, as in a CRD: `status: true` when status is written through
   * `/status`, `false` when the kind has none. Absent means the descriptor does not say, and the
   * client tries `/status` when asked to.
   */
  readonly subresources?: { readonly status?: boolean | undefined };
  /** A schema whose `parse` yields the object type; only its type is used (it carries `T`). */
  readonly schema?: { parse(data: unknown): T };
}

/**
 * Whether a kind is namespaced (`scope: "Namespaced"`). Throws when `scope` is missing or neither
 * value, which only untyped callers can get wrong.
 */
export function isNamespaced(resource: ResourceDescriptor): boolean {
  if (resource.scope === "Namespaced") return true;
  if (resource.scope === "Cluster") return false;
  throw new TypeError(
    `the descriptor of ${resource.kind} has scope ${JSON.stringify(resource.scope)}; give it scope: "Namespaced" or scope: "Cluster", as in its CRD`,
  );
}

/** Whether a kind has a status subresource: `true`, `false`, or `undefined` when the descriptor does not say. */
export function hasStatusSubresource(resource: ResourceDescriptor): boolean | undefined {
  return resource.subresources?.status;
}

/** The object type a descriptor stands for. */
export type ObjectOf<D> = D extends ResourceDescriptor<infer T> ? T : never;

/** Name and (for namespaced kinds) namespace of one object. */
export interface ObjectKey {
  /** Namespace; omit for cluster-scoped kinds. */
  namespace?: string;
  /** Object name. */
  name: string;
}

/** `group/version`, or just `version` for the core group: the object's `apiVersion`. */
export function apiVersionOf(resource: ResourceDescriptor): string {
  return resource.group === "" ? resource.version : `${resource.group}/${resource.version}`;
}

/**
 * A stable identifier of a resource, e.g. `cluster.x-k8s.io/v1beta2/machinepools` (used as a map key).
 * Built from the plural, not the kind, so that writes addressed by plural only (the patch helper's
 * `ResourceRef`) match the informer of the same resource.
 */
export function resourceId(
  resource: Pick<ResourceDescriptor, "group" | "version" | "plural">,
): string {
  return resource.group === ""
    ? `${resource.version}/${resource.plural}`
    : `${resource.group}/${resource.version}/${resource.plural}`;
}

/**
 * The queue/cache key of an object: `namespace/name`, or `name` for cluster-scoped ones (as client-go's
 * `MetaNamespaceKeyFunc`).
 */
export function objectKeyString(key: ObjectKey): string {
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}

/** Parses a key made by {@link objectKeyString}. */
export function parseObjectKey(key: string): ObjectKey {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The key of an object from its metadata; throws if it has no name. */
export function keyOfObject(obj: KubernetesObject): ObjectKey {
  const name = obj.metadata?.name;
  if (!name) {
    throw new TypeError(
      `object of kind ${obj.kind ?? "?"} has no metadata.name; set metadata.name before using it`,
    );
  }
  const namespace = obj.metadata?.namespace;
  return namespace ? { namespace, name } : { name };
}

/** Core v1 Secret. */
export const SecretResource: ResourceDescriptor<V1Secret> = {
  group: "",
  version: "v1",
  kind: "Secret",
  plural: "secrets",
  scope: "Namespaced",
};

/** Core v1 ConfigMap. */
export const ConfigMapResource: ResourceDescriptor<V1ConfigMap> = {
  group: "",
  version: "v1",
  kind: "ConfigMap",
  plural: "configmaps",
  scope: "Namespaced",
};

/** Core v1 Node (cluster-scoped, has status). */
export const NodeResource: ResourceDescriptor<V1Node> = {
  group: "",
  version: "v1",
  kind: "Node",
  plural: "nodes",
  scope: "Cluster",
  subresources: { status: true },
};

/** Core v1 Namespace (cluster-scoped, has status). */
export const NamespaceResource: ResourceDescriptor<V1Namespace> = {
  group: "",
  version: "v1",
  kind: "Namespace",
  plural: "namespaces",
  scope: "Cluster",
  subresources: { status: true },
};

/** Core v1 Event (what the event recorder writes). */
export const EventResource: ResourceDescriptor<CoreV1Event> = {
  group: "",
  version: "v1",
  kind: "Event",
  plural: "events",
  scope: "Namespaced",
};

/** `coordination.k8s.io/v1` Lease (leader election). */
export const LeaseResource: ResourceDescriptor<V1Lease> = {
  group: "coordination.k8s.io",
  version: "v1",
  kind: "Lease",
  plural: "leases",
  scope: "Namespaced",
};

/**
 * The REST path of a resource collection or object. Pure: no request is made.
 *
 * @example
 * ```ts
 * resourcePath(SecretResource, { namespace: "default", name: "x" }); // "/api/v1/namespaces/default/secrets/x"
 * resourcePath(MachinePoolResource, { namespace: "ns" }, "status");   // ".../machinepools/…/status" needs a name
 * ```
 */
export function resourcePath(
  resource: ResourceDescriptor,
  target: { namespace?: string | undefined; name?: string | undefined },
  subresource?: string,
): string {
  const base =
    resource.group === ""
      ? `/api/${resource.version}`
      : `/apis/${resource.group}/${resource.version}`;
  const namespace = target.namespace;
  if (!isNamespaced(resource) && namespace) {
    throw new TypeError(
      `${resource.kind} is cluster-scoped: do not pass a namespace (got "${namespace}")`,
    );
  }
  if (isNamespaced(resource) && target.name !== undefined && !namespace) {
    throw new TypeError(
      `${resource.kind} is namespaced: pass the namespace of "${target.name}" (metadata.namespace or { namespace })`,
    );
  }
  if (target.name !== undefined && target.name === "") {
    throw new TypeError(`${resource.kind}: the object name is empty; set metadata.name`);
  }
  // As client-go: a name that is not one path segment would address another path (`..`: a list).
  const nameProblem = target.name === undefined ? undefined : pathSegmentNameProblem(target.name);
  if (nameProblem) {
    throw new TypeError(
      `${resource.kind}: ${nameProblem}; an object name must be a single path segment (no request was sent)`,
    );
  }
  const namespaceProblem = namespace ? pathSegmentNameProblem(namespace) : undefined;
  if (namespaceProblem) {
    throw new TypeError(
      `${resource.kind}: namespace: ${namespaceProblem}; a namespace must be a single path segment (no request was sent)`,
    );
  }
  if (subresource !== undefined && target.name === undefined) {
    throw new TypeError(`${resource.kind}: the ${subresource} subresource needs an object name`);
  }
  let path = base;
  if (isNamespaced(resource) && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${resource.plural}`;
  if (target.name !== undefined) path += `/${encodeURIComponent(target.name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}
