import { KubeClient } from "@capi-ts/sdk/runtime";
import type { KubeConfig } from "@kubernetes/client-node";

/** A manifest: any object with apiVersion, kind and metadata. */
export interface ManifestObject {
  /** `group/version`. */
  apiVersion: string;
  /**
   * The object's kind, e.g. `CustomResourceDefinition`; with `apiVersion` it picks the REST
   * resource the object is applied to.
   */
  kind: string;
  /** Metadata; `namespace` for namespaced kinds. */
  metadata: { name: string; namespace?: string };
  /** Everything else. */
  [key: string]: unknown;
}

/** Options of {@link applyManifests}. */
export interface ApplyManifestsOptions {
  /** Field manager (default `capi-ts-apply`). */
  fieldManager?: string;
  /** Objects to send as a dry run only (validated, defaulted and admitted, never stored). */
  dryRun?: (object: ManifestObject) => boolean;
}

/** What happened to one object. */
export interface AppliedManifest {
  /** `Kind namespace/name`. */
  readonly object: string;
  /** Whether it was only dry-run. */
  readonly dryRun: boolean;
}

interface ApiResourceList {
  resources: Array<{ name: string; kind: string; namespaced: boolean }>;
}

/**
 * Server-side applies manifests in order, as `kubectl apply --server-side --validate=strict` does: an
 * unknown or duplicated field fails (`fieldValidation=Strict`), each kind is found through discovery,
 * and the first rejection throws naming the object and the server's reason. Use it to prove rendered
 * components are accepted by an API server.
 *
 * @example
 * ```ts
 * await applyManifests(controlPlane.kubeConfig, renderComponents(options), {
 *   dryRun: (object) => object.apiVersion.startsWith("cert-manager.io/"),
 * });
 * ```
 */
export async function applyManifests(
  kubeConfig: KubeConfig,
  objects: readonly ManifestObject[],
  options: ApplyManifestsOptions = {},
): Promise<AppliedManifest[]> {
  const client = new KubeClient(kubeConfig, {
    fieldManager: options.fieldManager ?? "capi-ts-apply",
  });
  const discovery = new Map<string, ApiResourceList>();
  const applied: AppliedManifest[] = [];
  for (const object of objects) {
    const { apiVersion, kind } = object;
    const { name, namespace } = object.metadata;
    const label = `${kind} ${namespace ? `${namespace}/` : ""}${name}`;
    const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    let list = discovery.get(apiVersion);
    if (!list) {
      try {
        list = (await client.request({ method: "GET", path: base })) as ApiResourceList;
      } catch (error) {
        throw new Error(
          `${label}: the server does not serve ${apiVersion} (${(error as Error).message}); install its CRDs first`,
        );
      }
      discovery.set(apiVersion, list);
    }
    const resource = list.resources.find(
      (entry) => entry.kind === kind && !entry.name.includes("/"),
    );
    if (!resource) throw new Error(`${label}: the server serves no ${kind} in ${apiVersion}`);
    if (resource.namespaced && !namespace)
      throw new Error(`${label}: ${kind} is namespaced; set metadata.namespace`);
    const path = `${base}/${resource.namespaced ? `namespaces/${namespace}/` : ""}${resource.name}/${name}`;
    const dryRun = options.dryRun?.(object) ?? false;
    try {
      await client.request({
        method: "PATCH",
        path,
        contentType: "application/apply-patch+yaml",
        body: object,
        query: {
          fieldManager: options.fieldManager ?? "capi-ts-apply",
          force: true,
          fieldValidation: "Strict",
          dryRun: dryRun ? "All" : undefined,
        },
      });
    } catch (error) {
      throw new Error(`${label} was rejected: ${(error as Error).message}`);
    }
    applied.push({ object: label, dryRun });
  }
  return applied;
}
