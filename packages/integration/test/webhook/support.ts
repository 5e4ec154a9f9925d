import { request } from "node:https";
import type { AdmissionRequest } from "@capi-ts/sdk/webhook";

/** POSTs `body` (an AdmissionReview, or raw text) to the webhook server and returns status + JSON. */
export function post(
  port: number,
  path: string,
  body: unknown,
  ca: string,
): Promise<{ status: number; text: string; json: () => { response: Record<string, unknown> } }> {
  return new Promise((resolve, reject) => {
    const payload = typeof body === "string" ? body : JSON.stringify(body);
    const call = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        ca,
        headers: { "content-type": "application/json" },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk) => {
          text += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, text, json: () => JSON.parse(text) }),
        );
      },
    );
    call.on("error", reject);
    call.end(payload);
  });
}

/**
 * An AdmissionReview around a request; `request.kind` is the object's kind (a template's review is of
 * the template kind, as the API server sends it), FakeCloudMachinePool when the object names none.
 */
export function review(admission: Partial<AdmissionRequest> & Pick<AdmissionRequest, "operation">) {
  const objectKind = (admission.object ?? admission.oldObject)?.kind;
  const kind =
    typeof objectKind === "string" && objectKind !== "" ? objectKind : "FakeCloudMachinePool";
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "4f1c2b8e-1",
      kind: {
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1beta2",
        kind,
      },
      resource: {
        group: "infrastructure.cluster.x-k8s.io",
        version: "v1beta2",
        resource: `${kind.toLowerCase()}s`,
      },
      name: "pool-a",
      namespace: "default",
      ...admission,
    },
  };
}
