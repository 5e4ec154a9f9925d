import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import { CodegenError } from "./errors.js";
import { formatBytes, INPUT_LIMITS } from "./limits.js";
import type { LoadedDocument } from "./load.js";

/** Where to read CRDs from a live cluster. */
export interface ClusterOptions {
  /** Path of a kubeconfig file; defaults to $KUBECONFIG, ~/.kube/config or the in-cluster config. */
  readonly kubeconfig?: string | undefined;
  /** A ready KubeConfig (takes precedence over `kubeconfig`). */
  readonly kubeConfig?: KubeConfig | undefined;
  /** Context to use instead of the current one. */
  readonly context?: string | undefined;
  /**
   * Milliseconds to wait for the whole answer of the API server (connecting included) before
   * giving up with a {@link CodegenError}; default {@link DEFAULT_CLUSTER_TIMEOUT_MS}. A server that
   * accepts the connection and never answers would otherwise hang the generator forever.
   */
  readonly timeoutMs?: number | undefined;
}

/** How long {@link loadClusterCrds} waits for the API server by default: 30 seconds. */
export const DEFAULT_CLUSTER_TIMEOUT_MS = 30_000;

/**
 * Lists the CustomResourceDefinitions of a cluster as raw JSON (client-node's typed models rename
 * the x-kubernetes-* schema extensions, so the list is fetched with a plain authenticated request).
 *
 * @param options - kubeconfig selection
 * @returns one document holding the CRD list
 */
export async function loadClusterCrds(options: ClusterOptions): Promise<LoadedDocument[]> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CLUSTER_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new CodegenError(
      { source: "options" },
      `the cluster timeout must be a positive number of milliseconds, not ${timeoutMs}`,
    );
  }
  let kc = options.kubeConfig;
  if (kc === undefined) {
    // Loaded on demand: client-node is a large module graph that generating from files never needs.
    const { KubeConfig: KubeConfigClass } = await import("@kubernetes/client-node");
    kc = new KubeConfigClass();
    try {
      if (options.kubeconfig !== undefined) kc.loadFromFile(options.kubeconfig);
      else kc.loadFromDefault();
    } catch (error) {
      throw new CodegenError(
        { source: options.kubeconfig ?? "kubeconfig" },
        `cannot load the kubeconfig: ${describe(error)}; pass --kubeconfig with a readable kubeconfig file`,
      );
    }
  }
  if (options.context !== undefined) {
    const context = options.context;
    if (!kc.getContexts().some((c) => c.name === context)) {
      throw new CodegenError(
        { source: options.kubeconfig ?? "kubeconfig" },
        `the kubeconfig has no context ${JSON.stringify(context)}; pick one of: ${
          kc
            .getContexts()
            .map((c) => c.name)
            .join(", ") || "(none)"
        }`,
      );
    }
    kc.setCurrentContext(context);
  }
  const cluster = kc.getCurrentCluster();
  const source = `cluster ${cluster?.server ?? "(none)"}`;
  if (cluster === null) {
    throw new CodegenError(
      { source },
      "the kubeconfig has no current cluster; pass --kubeconfig or set a context",
    );
  }
  let url: URL;
  try {
    url = new URL("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", cluster.server);
  } catch {
    throw new CodegenError(
      { source },
      `the kubeconfig's server ${JSON.stringify(cluster.server)} is not a URL`,
    );
  }
  const opts: RequestOptions = { method: "GET", headers: { accept: "application/json" } };
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (error) {
    throw new CodegenError(
      { source },
      `cannot set up the credentials of the kubeconfig: ${describe(error)}`,
    );
  }
  const body = await new Promise<string>((resolve, reject) => {
    const send = url.protocol === "http:" ? httpRequest : httpsRequest;
    // One deadline for the whole exchange: a socket idle timeout alone never fires on a server
    // that trickles a byte now and then.
    const deadline = setTimeout(() => {
      req.destroy(
        new CodegenError(
          { source },
          `the API server did not answer the CRD list within ${formatSeconds(timeoutMs)}; check that the server is up, or allow more time with --request-timeout`,
        ),
      );
    }, timeoutMs);
    const fail = (error: unknown) => {
      clearTimeout(deadline);
      reject(error);
    };
    const req = send(url, opts, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > INPUT_LIMITS.maxInputBytes) {
          req.destroy(
            new CodegenError(
              { source },
              `the CRD list is larger than ${formatBytes(INPUT_LIMITS.maxInputBytes)}; select fewer CRDs or generate from files`,
            ),
          );
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => {
        clearTimeout(deadline);
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
      res.on("error", fail);
    });
    req.on("error", (error) =>
      fail(
        error instanceof CodegenError
          ? error
          : new CodegenError({ source }, `cannot reach the cluster: ${error.message}`),
      ),
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

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
