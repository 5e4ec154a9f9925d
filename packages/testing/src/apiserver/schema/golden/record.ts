// Records what a real kube-apiserver answers to the golden scenarios, for golden.test.ts to compare the
// engines with. Needs kube-apiserver and etcd (`./dev controlplane`, or KUBEBUILDER_ASSETS). Run:
//   ./dev node --conditions=capi-ts-source --import tsx packages/testing/src/apiserver/schema/golden/record.ts
// then format the JSON: ./dev pnpm exec biome check --write packages/testing/src/apiserver/schema/golden
import { writeFile } from "node:fs/promises";
import { type RequestOptions, request } from "node:https";
import { resolve } from "node:path";
import { startControlPlane } from "../../../controlplane/index.js";
import { crdPath } from "../crd-fixtures.test-support.js";
import { crdFiles, type Step, steps, widgetCRD } from "./scenarios.js";

const output = resolve(import.meta.dirname, "kube-apiserver.golden.json");

type Obj = Record<string, unknown>;

const plane = await startControlPlane({ startTimeoutMs: 600_000 });
try {
  await plane.installCRDs([...crdFiles.map((f) => crdPath(f)), widgetCRD]);
  const recorded: Obj[] = [];
  for (const step of steps) {
    const { status, body } = await send(step);
    recorded.push({ name: step.name, ...summarize(status, body) });
    console.log(`${step.name}: ${status}`);
  }
  const golden = { server: plane.version, responses: recorded };
  await writeFile(output, `${JSON.stringify(golden, null, 1)}\n`);
  console.log(`wrote ${output}`);
} finally {
  await plane.stop();
}

async function send(step: Step): Promise<{ status: number; body: unknown }> {
  const options: RequestOptions = { method: step.method, headers: { accept: "application/json" } };
  await plane.kubeConfig.applyToHTTPSOptions(options);
  const payload =
    step.body === undefined
      ? undefined
      : typeof step.body === "string"
        ? step.body
        : JSON.stringify(step.body);
  const headers = options.headers as Record<string, string | number>;
  if (payload !== undefined) {
    headers["content-type"] = step.contentType ?? "application/json";
    headers["content-length"] = Buffer.byteLength(payload);
  }
  return new Promise((resolveResponse, reject) => {
    const req = request(new URL(step.path, plane.url), options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // keep the text
        }
        resolveResponse({ status: res.statusCode ?? 0, body });
      });
    });
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** What the golden test compares: the error (reason, message, causes) or the object's parts. */
function summarize(status: number, body: unknown): Obj {
  const obj = (body ?? {}) as Obj;
  if (status >= 400) {
    const details = obj.details as Obj | undefined;
    return {
      status,
      reason: obj.reason ?? "",
      message: obj.message,
      causes: (details?.causes as unknown[] | undefined) ?? [],
    };
  }
  const meta = (obj.metadata ?? {}) as Obj;
  const managedFields = ((meta.managedFields as Obj[] | undefined) ?? []).map((e) => {
    const { time: _time, ...rest } = e;
    return rest;
  });
  return {
    status,
    spec: obj.spec,
    objectStatus: obj.status,
    labels: meta.labels,
    finalizers: meta.finalizers,
    managedFields,
  };
}
