// How the scaleFromZero scenario reads a pool: as the cluster-autoscaler's clusterapi provider does,
// over HTTP, from the MachinePool's infrastructureRef, failing by name wherever the autoscaler would
// silently find nothing or drop part of it. The pools here are of a provider not built on the SDK
// (its CRD keeps any status), so they can hold what the SDK's CRD refuses.
import type { clusterv1beta2 } from "@capi-ts/sdk/api";
import { KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/index.js";
import { ConformanceError } from "../../src/conformance/invariants.js";
import { autoscalerNodeTemplate } from "../../src/conformance/scale-from-zero.js";

const GROUP = "infrastructure.lax.example.com";

function crd(kind: string, plural: string): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: "Namespaced",
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: false,
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
          },
        },
        {
          name: "v1beta1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
          },
        },
      ],
    },
  };
}

type Pool = KubernetesObject & { status?: Record<string, unknown> };
const resource = (kind: string, plural: string): ResourceDescriptor<Pool> => ({
  group: GROUP,
  version: "v1beta1",
  kind,
  plural,
  scope: "Namespaced",
  subresources: { status: false },
});
const LaxPools = resource("LaxMachinePool", "laxmachinepools");
const Proxies = resource("LaxPoolProxy", "laxpoolproxies");

/** A MachinePool naming `name` of `kind` as its infrastructure. */
function machinePool(kind: string, name: string): clusterv1beta2.MachinePool {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { namespace: "default", name },
    spec: {
      clusterName: "c1",
      replicas: 0,
      template: {
        spec: {
          clusterName: "c1",
          bootstrap: { dataSecretName: "b" },
          infrastructureRef: { apiGroup: GROUP, kind, name },
        },
      },
    },
  } as clusterv1beta2.MachinePool;
}

let api: ApiServer;
let client: KubeClient;
let seq = 0;

beforeAll(async () => {
  api = await startApiServer();
  await api.installCRDs([
    crd("LaxMachinePool", "laxmachinepools"),
    crd("LaxPoolProxy", "laxpoolproxies"),
  ]);
  client = new KubeClient(api.kubeConfig);
});
afterAll(async () => {
  await api?.stop();
});

/** Stores a pool with `status` and reads it as the autoscaler would. */
async function template(status: Record<string, unknown> | undefined) {
  const name = `pool-${++seq}`;
  await client.create(LaxPools, {
    apiVersion: `${GROUP}/v1beta1`,
    kind: "LaxMachinePool",
    metadata: { namespace: "default", name },
    ...(status ? { status } : {}),
  });
  return autoscalerNodeTemplate(client, machinePool("LaxMachinePool", name));
}

async function failure(status: Record<string, unknown>): Promise<ConformanceError> {
  const error = await template(status).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConformanceError);
  return error as ConformanceError;
}

describe("autoscalerNodeTemplate: the pool as the cluster-autoscaler reads it", () => {
  it("parses every quantity and reads nodeInfo, at the group's preferred version", async () => {
    const read = await template({
      capacity: { cpu: "2", memory: "4Gi", "nvidia.com/gpu": "1" },
      nodeInfo: { architecture: "arm64", operatingSystem: "linux" },
    });
    expect(read?.capacity).toEqual(
      new Map([
        ["cpu", 2],
        ["memory", 4 * 2 ** 30],
        ["nvidia.com/gpu", 1],
      ]),
    );
    expect(read?.nodeInfo).toEqual({ architecture: "arm64", operatingSystem: "linux" });
  });

  it("finds nothing yet on a pool without status.capacity", async () => {
    expect(await template(undefined)).toBeUndefined();
    expect(await template({ replicas: 0 })).toBeUndefined();
  });

  it("fails a capacity with one value that is not a string: the autoscaler would ignore all of it", async () => {
    const error = await failure({ capacity: { cpu: 4, memory: "4Gi" } });
    expect(error.check).toBe("autoscaler.capacityStrings");
    expect(error.message).toMatch(/ignores all of it when one value is not \(write "4", not 4\)/);
  });

  it("fails a value that is not a quantity: the autoscaler would drop it", async () => {
    const error = await failure({ capacity: { cpu: "2", memory: "lots" } });
    expect(error.check).toBe("autoscaler.capacityQuantities");
    expect(error.message).toMatch(
      /status.capacity\["memory"\] "lots" is not a Kubernetes quantity/,
    );
  });

  it("fails a nodeInfo that is not a map of strings", async () => {
    const error = await failure({
      capacity: { cpu: "2", memory: "4Gi" },
      nodeInfo: { architecture: 64 },
    });
    expect(error.check).toBe("autoscaler.nodeInfo");
  });

  it("fails a kind the autoscaler looks up under another plural than the CRD's", async () => {
    await client.create(Proxies, {
      apiVersion: `${GROUP}/v1beta1`,
      kind: "LaxPoolProxy",
      metadata: { namespace: "default", name: "proxy-1" },
      status: { capacity: { cpu: "2", memory: "4Gi" } },
    });
    const error = await autoscalerNodeTemplate(
      client,
      machinePool("LaxPoolProxy", "proxy-1"),
    ).catch((e: unknown) => e as ConformanceError);
    expect(error).toBeInstanceOf(ConformanceError);
    expect((error as ConformanceError).check).toBe("autoscaler.infrastructureRef");
    expect((error as ConformanceError).message).toMatch(
      /reads LaxPoolProxy default\/proxy-1 as laxpoolproxys\.v1beta1\.infrastructure\.lax\.example\.com/,
    );
  });

  it("fails a MachinePool whose infrastructureRef lacks what the autoscaler needs", async () => {
    const mp = machinePool("LaxMachinePool", "x");
    (
      mp.spec as { template: { spec: { infrastructureRef: object } } }
    ).template.spec.infrastructureRef = {
      kind: "LaxMachinePool",
      name: "x",
    };
    await expect(autoscalerNodeTemplate(client, mp)).rejects.toThrow(
      /\[autoscaler.infrastructureRef\] MachinePool x has infrastructureRef .*needs its apiGroup, kind and name/,
    );
  });
});
