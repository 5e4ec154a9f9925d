import { getV1Beta1Condition, setCondition, setV1Beta1Condition } from "@capi-ts/sdk/conditions";
import { removeFinalizer } from "@capi-ts/sdk/contract";
import { httpStatusOf, PatchHelper } from "@capi-ts/sdk/patch";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, capiCrd, startBackend } from "../support/backend.js";
import { clearRequestLog, onRequestLog } from "../support/request-log.js";

const ns = "default";
const machinePools = { group: "cluster.x-k8s.io", version: "v1beta2", plural: "machinepools" };
const devPools = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  plural: "devmachinepools",
};
const clock = { now: () => Date.parse("2026-03-04T05:06:07Z") };
let backend: Backend;
let custom: CustomObjectsApi;

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    finalizers?: string[];
    resourceVersion?: string;
    generation?: number;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

beforeAll(async () => {
  backend = await startBackend();
  await backend.installCRDs([
    capiCrd("cluster.x-k8s.io_machinepools.yaml"),
    capiCrd("infrastructure.cluster.x-k8s.io_devmachinepools.yaml"),
  ]);
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
});
afterAll(async () => {
  await backend?.stop();
});

describe("PatchHelper on CAPI kinds", () => {
  it("MachinePool v1beta2: v1beta2 and deprecated v1beta1 conditions go to /status in one locked patch", async () => {
    const mp = (await custom.createNamespacedCustomObject({
      ...machinePools,
      namespace: ns,
      body: {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        metadata: { name: "mp-1", namespace: ns },
        spec: {
          clusterName: "c",
          replicas: 1,
          template: {
            spec: {
              clusterName: "c",
              bootstrap: { dataSecretName: "s" },
              infrastructureRef: {
                apiGroup: "infrastructure.cluster.x-k8s.io",
                kind: "DevMachinePool",
                name: "p",
              },
            },
          },
        },
      },
    })) as Obj;
    const patch = PatchHelper.snapshot(mp);
    setCondition(mp, { type: "Paused", status: "False", reason: "NotPaused" }, { clock });
    setV1Beta1Condition(
      mp,
      {
        type: "InfrastructureReady",
        status: "False",
        severity: "Info",
        reason: "WaitingForInfrastructure",
      },
      { clock },
    );
    clearRequestLog(backend);
    const result = await patch.apply(backend.kubeConfig, mp, { ownedConditions: ["Paused"] });
    const paused = {
      type: "Paused",
      status: "False",
      reason: "NotPaused",
      message: "",
      lastTransitionTime: "2026-03-04T05:06:07Z",
      observedGeneration: 1,
    };
    onRequestLog(backend, { name: "mp-1" }, (requests) => {
      expect(requests.map((r) => `${r.verb}/${r.subresource ?? ""}`)).toEqual([
        "get/",
        "patch/status",
      ]);
      expect(requests[1]?.body).toEqual({
        metadata: { resourceVersion: mp.metadata.resourceVersion },
        status: {
          conditions: [paused],
          deprecated: {
            v1beta1: {
              conditions: [
                {
                  type: "InfrastructureReady",
                  status: "False",
                  severity: "Info",
                  reason: "WaitingForInfrastructure",
                  lastTransitionTime: "2026-03-04T05:06:07Z",
                },
              ],
            },
          },
        },
      });
    });
    expect(result).toMatchObject({ requests: 2, patched: { conditions: true } });
    const stored = (await custom.getNamespacedCustomObject({
      ...machinePools,
      namespace: ns,
      name: "mp-1",
    })) as Obj;
    expect(getV1Beta1Condition(stored, "InfrastructureReady")?.reason).toBe(
      "WaitingForInfrastructure",
    );
    expect(stored.status?.conditions).toEqual([paused]);
  });

  it("finalizer removal while deleting: the object goes away and the 404 on /status is not an error", async () => {
    const finalizer = "devmachinepool.infrastructure.cluster.x-k8s.io";
    await custom.createNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "DevMachinePool",
        metadata: { name: "going", namespace: ns, finalizers: [finalizer] },
        spec: {},
      },
    });
    await custom.deleteNamespacedCustomObject({ ...devPools, namespace: ns, name: "going" });
    const deleting = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "going",
    })) as Obj;
    const patch = PatchHelper.snapshot(deleting);
    removeFinalizer(deleting, finalizer);
    deleting.status = { ...deleting.status, replicas: 0 };
    clearRequestLog(backend);
    await expect(patch.apply(backend.kubeConfig, deleting)).resolves.toMatchObject({
      patched: { spec: true, status: false },
    });
    onRequestLog(backend, { name: "going" }, (requests) =>
      expect(requests.map((r) => `${r.verb}/${r.subresource ?? ""}:${r.status}`)).toEqual([
        "patch/:200",
        "patch/status:404",
      ]),
    );
    const gone = await custom
      .getNamespacedCustomObject({ ...devPools, namespace: ns, name: "going" })
      .catch((e: unknown) => e);
    expect(httpStatusOf(gone)).toBe(404);
  });
});
