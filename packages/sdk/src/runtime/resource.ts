import type {
  CoreV1Event,
  KubernetesObject,
  V1ConfigMap,
  V1Lease,
  V1Namespace,
  V1Node,
  V1Secret,
} from "@kubernetes/client-node";

/**
 * Everything the runtime needs to address a kind over REST without a discovery round-trip. The
 * generated resource metadata in `src/api` (`MachinePoolResource`, …) satisfies it as is (it says
 * `scope` and `subresources.status`, and its `schema` carries the object type); hand-written
 * descriptors say `namespaced` and `hasStatus`. Core kinds have constants below ({@link SecretResource}, …).
 *
 * @example
 * ```ts
 * const WidgetResource: ResourceDescriptor<Widget> = {
 *   group: "example.com", version: "v1", kind: "Widget", plural: "widgets", namespaced: true, hasStatus: true,
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
  /** Whether objects live in a namespace (or say it with `scope`). */
  readonly namespaced?: boolean;
  /** `Namespaced` or `Cluster`, as in a CRD (alternative to `namespaced`). */
  readonly scope?: "Namespaced" | "Cluster";
  /** Whether the kind has a `/status` subresource (or say it with `subresources.status`). */
  readonly hasStatus?: boolean;
  /** Subresources, as in a CRD version (alternative to `hasStatus`). */
  readonly subresources?: { readonly status?: boolean | undefined };
  /** A schema whose `parse` yields the object type; only its type is used (it carries `T`). */
  readonly schema?: { parse(data: unknown): T };
}

/**
 * Whether a kind is namespaced, from `namespaced` or `scope`; throws if the descriptor says neither.
 */
export function isNamespaced(resource: ResourceDescriptor): boolean {
  if (resource.namespaced !== undefined) return resource.namespaced;
  if (resource.scope !== undefined) return resource.scope === "Namespaced";
  throw new TypeError(
    `the descriptor of ${resource.kind} says neither namespaced: true|false nor scope: "Namespaced"|"Cluster"; add one`,
  );
}

/** Whether a kind has a status subresource: `true`, `false`, or `undefined` when the descriptor does not say. */
export function hasStatusSubresource(resource: ResourceDescriptor): boolean | undefined {
  return resource.hasStatus ?? resource.subresources?.status;
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
  namespaced: true,
};

/** Core v1 ConfigMap. */
export const ConfigMapResource: ResourceDescriptor<V1ConfigMap> = {
  group: "",
  version: "v1",
  kind: "ConfigMap",
  plural: "configmaps",
  namespaced: true,
};

/** Core v1 Node (cluster-scoped, has status). */
export const NodeResource: ResourceDescriptor<V1Node> = {
  group: "",
  version: "v1",
  kind: "Node",
  plural: "nodes",
  namespaced: false,
  hasStatus: true,
};

/** Core v1 Namespace (cluster-scoped, has status). */
export const NamespaceResource: ResourceDescriptor<V1Namespace> = {
  group: "",
  version: "v1",
  kind: "Namespace",
  plural: "namespaces",
  namespaced: false,
  hasStatus: true,
};

/** Core v1 Event (what the event recorder writes). */
export const EventResource: ResourceDescriptor<CoreV1Event> = {
  group: "",
  version: "v1",
  kind: "Event",
  plural: "events",
  namespaced: true,
};

/** `coordination.k8s.io/v1` Lease (leader election). */
export const LeaseResource: ResourceDescriptor<V1Lease> = {
  group: "coordination.k8s.io",
  version: "v1",
  kind: "Lease",
  plural: "leases",
  namespaced: true,
};
