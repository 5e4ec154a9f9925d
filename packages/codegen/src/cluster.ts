import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import { CodegenError } from "./errors.js";
import type { LoadedDocument } from "./load.js";

/** Where to read CRDs from a live cluster. */
export interface ClusterOptions {
  /** Path of a kubeconfig file; defaults to $KUBECONFIG, ~/.kube/config or the in-cluster config. */
  readonly kubeconfig?: string | undefined;
  /** A ready KubeConfig (takes precedence over `kubeconfig`). */
  readonly kubeConfig?: KubeConfig | undefined;
  /** Context to use instead of the current one. */
  readonly context?: string | undefined;
}

/**
 * Lists the CustomResourceDefinitions of a cluster as raw JSON (client-node's typed models rename
 * the x-kubernetes-* schema extensions, so the list is fetched with a plain authenticated request).
 *
 * @param options - kubeconfig selection
 * @returns one document holding the CRD list
 */
export async function loadClusterCrds(options: ClusterOptions): Promise<LoadedDocument[]> {
  let kc = options.kubeConfig;
  if (kc === undefined) {
    // Loaded on demand: client-node is a large module graph that generating from files never needs.
    const { KubeConfig: KubeConfigClass } = await import("@kubernetes/client-node");
    kc = new KubeConfigClass();
    if (options.kubeconfig !== undefined) kc.loadFromFile(options.kubeconfig);
    else kc.loadFromDefault();
  }
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  const cluster = kc.getCurrentCluster();
  const source = `cluster ${cluster?.server ?? "(none)"}`;
  if (cluster === null) {
    throw new CodegenError(
      { source },
      "the kubeconfig has no current cluster; pass --kubeconfig or set a context",
    );
  }
  const url = new URL("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", cluster.server);
  const opts: RequestOptions = { method: "GET", headers: { accept: "application/json" } };
  await kc.applyToHTTPSOptions(opts);
  const body = await new Promise<string>((resolve, reject) => {
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    const req = send(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if ((res.statusCode ?? 0) >= 300) {
          reject(
            new CodegenError(
              { source },
              `listing CRDs failed with HTTP ${res.statusCode}: ${text.slice(0, 200)}`,
            ),
          );
        } else resolve(text);
      });
      res.on("error", reject);
    });
    req.on("error", (error) =>
      reject(new CodegenError({ source }, `cannot reach the cluster: ${error.message}`)),
    );
    req.end();
  });
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new CodegenError({ source }, "the API server did not return JSON for the CRD list");
  }
  // List items carry no apiVersion/kind on the wire; restore them so each item reads as a CRD.
  const items = isList(value) ? value.items : [];
  const crds = items.map((item) =>
    typeof item === "object" && item !== null
      ? { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", ...item }
      : item,
  );
  return [
    { source, document: 0, pathPrefix: "", value: { apiVersion: "v1", kind: "List", items: crds } },
  ];
}

function isList(value: unknown): value is { items: unknown[] } {
  return (
    typeof value === "object" &&
    value !== null &&
    Array.isArray((value as { items?: unknown }).items)
  );
}
