import http from "node:http";
import https from "node:https";
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import { ApiException, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { until } from "./eventually.js";

/** A small CRD served in two versions (v1 storage, v2), with a status subresource and a schema. */
export const widgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.example.capi-ts.dev" },
  spec: {
    group: "example.capi-ts.dev",
    scope: "Namespaced",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wd"],
      categories: ["all", "examples"],
    },
    versions: ["v1", "v2"].map((name) => ({
      name,
      served: true,
      storage: name === "v1",
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: { type: "object" },
            spec: {
              type: "object",
              required: ["size"],
              properties: {
                size: { type: "integer", minimum: 1, maximum: 10 },
                color: { type: "string", enum: ["red", "green", "blue"], default: "red" },
                tags: {
                  type: "array",
                  items: {
                    type: "object",
                    required: ["key"],
                    properties: { key: { type: "string" }, value: { type: "string" } },
                  },
                  "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["key"],
                },
                free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
            status: {
              type: "object",
              properties: {
                ready: { type: "boolean" },
                observedGeneration: { type: "integer" },
              },
            },
          },
        },
      },
    })),
  },
};

/** The Widget API coordinates for CustomObjectsApi. */
/** A descriptor of a namespaced kind with a status subresource, the shape of every CAPI kind. */
export function namespacedKind<T extends KubernetesObject>(
  group: string,
  version: string,
  kind: string,
  plural: string,
): ResourceDescriptor<T> {
  return { group, version, kind, plural, scope: "Namespaced", subresources: { status: true } };
}

export const widgets = { group: "example.capi-ts.dev", version: "v1", plural: "widgets" } as const;

/** Runs `fn`, expecting an ApiException; returns its code and parsed Status body. */
export async function apiError(fn: () => Promise<unknown>): Promise<{
  code: number;
  status: {
    reason?: string;
    message?: string;
    code?: number;
    details?: {
      causes?: { field?: string; reason?: string; message?: string }[];
      retryAfterSeconds?: number;
      name?: string;
      kind?: string;
    };
  };
  headers: Record<string, string>;
}> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof ApiException) {
      // A Status for API errors; plain text (`404 page not found`) for paths the server does not serve.
      let body = e.body;
      if (typeof e.body === "string") {
        try {
          body = JSON.parse(e.body);
        } catch {
          body = { message: e.body };
        }
      }
      return { code: e.code, status: body, headers: e.headers };
    }
    throw e;
  }
  throw new Error("expected the call to fail with an ApiException, but it succeeded");
}

/** Waits until `check` returns a truthy value (state changed by server-side controllers). */
export const eventually = <T>(
  check: () => T | Promise<T>,
  timeoutMs = 3000,
): Promise<NonNullable<T>> => until(check, "the condition", timeoutMs, 10);

/** A raw HTTP exchange with the API server, authenticated and trusted like client-node's own requests. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends one request straight to the server of `kc` (http or https, with the kubeconfig's credentials),
 * for behaviour the typed clients cannot express (a method on the wrong path, the raw stream format).
 * `maxMs` ends the read early (for watch streams) and returns what arrived.
 */
export async function rawRequest(
  kc: KubeConfig,
  method: string,
  path: string,
  options: { body?: string; headers?: Record<string, string>; maxMs?: number } = {},
): Promise<RawResponse> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error("the kubeconfig has no current cluster");
  const url = new URL(path, server);
  const opts: https.RequestOptions = {
    method,
    hostname: url.hostname,
    port: url.port,
    path: `${url.pathname}${url.search}`,
    headers: { ...options.headers },
  };
  await kc.applyToHTTPSOptions(opts);
  const send = url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(opts, (res) => {
      let body = "";
      res.setEncoding("utf8");
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      const timer = options.maxMs
        ? setTimeout(() => {
            req.destroy();
            done();
          }, options.maxMs)
        : undefined;
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => {
        if (timer) clearTimeout(timer);
        done();
      });
    });
    req.on("error", (e) => (options.maxMs ? undefined : reject(e)));
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}
