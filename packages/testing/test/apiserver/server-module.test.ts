// Imports the server module alone, not the package entry: the engines must come with the server, not
// from a module that some other import happens to load first.
import { afterEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer, startApiServerWith } from "../../src/apiserver/server.js";
import { widgetCrd } from "../support/fixtures.js";

const widgetsPath = "/apis/example.capi-ts.dev/v1/namespaces/default/widgets";
let api: ApiServer | undefined;
afterEach(() => api?.stop());

async function request(
  method: string,
  path: string,
  body: unknown,
  contentType = "application/json",
) {
  if (!api) throw new Error("no server");
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: { "content-type": contentType },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const widget = (name: string) => ({
  apiVersion: "example.capi-ts.dev/v1",
  kind: "Widget",
  metadata: { name },
  spec: { size: 3, unknownField: "pruned" },
});

// In-memory only: it starts its own servers. Not through support/backend.ts, which loads the package entry.
describe.skipIf(process.env.CAPI_TS_BACKEND === "real")(
  "startApiServer from the server module alone",
  () => {
    it("prunes, defaults and validates CRD objects and serves every patch type", async () => {
      api = await startApiServer({ crds: [widgetCrd] });
      const created = await request("POST", widgetsPath, widget("w1"));
      expect(created.status).toBe(201);
      expect(created.body.spec).toEqual({ size: 3, color: "red" });
      const invalid = await request("POST", widgetsPath, { ...widget("w2"), spec: { size: 99 } });
      expect(invalid.status).toBe(422);

      const jsonPatched = await request(
        "PATCH",
        `${widgetsPath}/w1`,
        [{ op: "replace", path: "/spec/size", value: 4 }],
        "application/json-patch+json",
      );
      expect(jsonPatched.status).toBe(200);
      const applied = await request(
        "PATCH",
        `${widgetsPath}/w1?fieldManager=test&force=true`,
        { ...widget("w1"), spec: { size: 5 } },
        "application/apply-patch+yaml",
      );
      expect(applied.status).toBe(200);
      expect((applied.body.spec as { size: number }).size).toBe(5);
    });

    it("serves without the engines it is not given", async () => {
      api = await startApiServerWith({ crds: [widgetCrd] }, {});
      const created = await request("POST", widgetsPath, widget("w1"));
      expect(created.status).toBe(201);
      expect(created.body.spec).toEqual({ size: 3, unknownField: "pruned" });
      const jsonPatched = await request(
        "PATCH",
        `${widgetsPath}/w1`,
        [{ op: "replace", path: "/spec/size", value: 4 }],
        "application/json-patch+json",
      );
      expect(jsonPatched.status).toBe(415);
    });
  },
);
