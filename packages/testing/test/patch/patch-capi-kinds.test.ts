import {
  getV1Beta1Condition,
  PatchHelper,
  removeFinalizer,
  setCondition,
  setV1Beta1Condition,
} from "@capi-ts/sdk";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { capiCrd } from "../support/backend.js";

const ns = "default";
const machinePools = { group: "cluster.x-k8s.io", version: "v1beta2", plural: "machinepools" };
const devPools = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  plural: "devmachinepools",
};
const clock = () => new Date("2026-03-04T05:06:07Z");
let api: ApiServer;
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
  api = await startApiServer();
  await api.installCRDs([
    capiCrd("cluster.x-k8s.io_machinepools.yaml"),
    capiCrd("infrastructure.cluster.x-k8s.io_devmachinepools.yaml"),
  ]);
  custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
});
afterAll(async () => {
  await api?.stop();
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
    api.clearRequests();
    await patch.apply(api.kubeConfig, mp, { ownedConditions: ["Paused"] });
    const requests = api.requests({ name: "mp-1" });
    expect(requests.map((r) => `${r.verb}/${r.subresource ?? ""}`)).toEqual([
      "get/",
      "patch/status",
    ]);
    expect(requests[1]?.body).toEqual({
      metadata: { resourceVersion: mp.metadata.resourceVersion },
      status: {
        conditions: [
          {
            type: "Paused",
            status: "False",
            reason: "NotPaused",
            message: "",
            lastTransitionTime: "2026-03-04T05:06:07Z",
            observedGeneration: 1,
          },
        ],
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
    const stored = (await custom.getNamespacedCustomObject({
      ...machinePools,
      namespace: ns,
      name: "mp-1",
    })) as Obj;
    expect(getV1Beta1Condition(stored, "InfrastructureReady")?.reason).toBe(
      "WaitingForInfrastructure",
    );
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
    api.clearRequests();
    await expect(patch.apply(api.kubeConfig, deleting)).resolves.toMatchObject({
      patched: { spec: true, status: false },
    });
    expect(
      api.requests({ name: "going" }).map((r) => `${r.verb}/${r.subresource ?? ""}:${r.status}`),
    ).toEqual(["patch/:200", "patch/status:404"]);
  });
});
