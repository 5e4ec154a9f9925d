import { ApiException } from "@kubernetes/client-node";

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

/** Polls until `check` returns a truthy value (for state changed by server-side controllers). */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 3000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}
