import type { KubeObject, PatchTransport, ResourceRef } from "../patch/transport.js";
import type { KubeClient } from "./client.js";
import type { ResourceDescriptor } from "./resource.js";

function descriptorOf(resource: ResourceRef, namespace: string | undefined): ResourceDescriptor {
  return {
    group: resource.group,
    version: resource.version,
    plural: resource.plural,
    kind: resource.plural,
    namespaced: namespace !== undefined,
  };
}

/**
 * Lets the patch helper write through a {@link KubeClient}, so its writes go through the runtime's
 * typed errors and feed the cache's read-your-own-writes (and core kinds work too).
 *
 * @example
 * ```ts
 * const transport = kubeClientPatchTransport(ctx.client);
 * await PatchHelper.snapshot(pool).apply(transport, pool);
 * ```
 */
export function kubeClientPatchTransport(client: KubeClient): PatchTransport {
  return {
    async get(resource, namespace, name) {
      const key = namespace === undefined ? { name } : { namespace, name };
      return (await client.get(descriptorOf(resource, namespace), key)) as KubeObject;
    },
    async patch(resource, namespace, name, body, contentType, subresource) {
      const descriptor = descriptorOf(resource, namespace);
      const key = namespace === undefined ? { name } : { namespace, name };
      if (contentType === "application/merge-patch+json") {
        return (await (subresource === "status"
          ? client.mergePatchStatus(descriptor, key, body)
          : client.mergePatch(descriptor, key, body))) as KubeObject;
      }
      if (contentType === "application/json-patch+json") {
        const operations = body as Parameters<KubeClient["jsonPatch"]>[2];
        return (await (subresource === "status"
          ? client.jsonPatchStatus(descriptor, key, operations)
          : client.jsonPatch(descriptor, key, operations))) as KubeObject;
      }
      throw new TypeError(
        `kubeClientPatchTransport: content type ${contentType} is not supported; use merge or JSON patch`,
      );
    },
  };
}
