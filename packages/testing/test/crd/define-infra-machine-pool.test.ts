import { defineInfraMachinePool } from "@capi-ts/sdk/crd";
import {
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type Backend, onReal, startBackend } from "../support/backend.js";
import { apiError } from "../support/fixtures.js";

// A provider kind using the zod features a provider is likely to reach for.
const Acme = defineInfraMachinePool({
  group: "infrastructure.acme.capi-ts.dev",
  kind: "AcmeMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec: z.object({
    instanceType: z.string().min(2).max(32),
    image: z.string().regex(/^img-[0-9a-f]+$/),
    rootVolumeGiB: z.int32().min(8).max(16384).optional(),
    zone: z.enum(["a", "b", "c"]).default("a"),
    subnets: z.array(z.string().min(1)).max(4).optional(),
    tags: z.record(z.string(), z.string().max(16)).optional(),
    spot: z.object({ maxPrice: z.string().min(1), interruptible: z.boolean() }).optional(),
    note: z.string().nullable().optional(),
  }),
  status: z.object({
    groupArn: z.string().min(1).optional(),
    lastScaleTime: z.iso.datetime().optional(),
  }),
  machinePoolMachines: true,
});

const ns = "default";
let backend: Backend;
let custom: CustomObjectsApi;
let n = 0;

const base = () => ({ instanceType: "m5.large", image: "img-0a1b" });

function k8sPath(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>(
    (out, key) =>
      typeof key === "number" ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key),
    "",
  );
}

async function create(spec: unknown, status?: unknown) {
  const name = `acme-${++n}`;
  const { group, version, plural } = Acme.resource;
  const created = (await custom.createNamespacedCustomObject({
    group,
    version,
    plural,
    namespace: ns,
    body: { apiVersion: Acme.apiVersion, kind: Acme.kind, metadata: { name, namespace: ns }, spec },
  })) as { metadata: { name: string } };
  if (status !== undefined) {
    await custom.patchNamespacedCustomObjectStatus(
      { group, version, plural, namespace: ns, name, body: { status } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }
  return created;
}

beforeAll(async () => {
  backend = await startBackend();
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  await backend.installCRDs(
    Acme.manifests().filter((m) => m.kind === "CustomResourceDefinition") as unknown as Record<
      string,
      unknown
    >[],
  );
});
afterAll(async () => {
  await backend?.stop();
});

describe("defineInfraMachinePool manifests on an API server", () => {
  const valid: Array<[string, Record<string, unknown>]> = [
    ["minimal", base()],
    [
      "everything",
      {
        ...base(),
        rootVolumeGiB: 100,
        zone: "c",
        subnets: ["s-1", "s-2"],
        tags: { team: "infra" },
        spot: { maxPrice: "0.1", interruptible: true },
        note: null,
        providerIDList: ["acme://eu/i-1", "acme://eu/i-2"],
        providerID: "asg/pool",
      },
    ],
  ];

  it.each(valid)("accepts an object zod accepts (%s)", async (_name, spec) => {
    const object = { apiVersion: Acme.apiVersion, kind: Acme.kind, metadata: { name: "x" }, spec };
    expect(Acme.schema.safeParse(object).success).toBe(true);
    await expect(create(spec)).resolves.toBeDefined();
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ["instanceType too short", { ...base(), instanceType: "m" }, "spec.instanceType"],
    ["image pattern", { ...base(), image: "ami-123" }, "spec.image"],
    ["int32 below minimum", { ...base(), rootVolumeGiB: 4 }, "spec.rootVolumeGiB"],
    ["enum", { ...base(), zone: "z" }, "spec.zone"],
    ["too many subnets", { ...base(), subnets: ["1", "2", "3", "4", "5"] }, "spec.subnets"],
    ["empty subnet", { ...base(), subnets: [""] }, "spec.subnets[0]"],
    ["tag value too long", { ...base(), tags: { team: "x".repeat(17) } }, "spec.tags.team"],
    ["nested required field", { ...base(), spot: { maxPrice: "1" } }, "spec.spot.interruptible"],
    [
      "wrong type",
      { ...base(), spot: { maxPrice: "1", interruptible: "yes" } },
      "spec.spot.interruptible",
    ],
    ["required field missing", { image: "img-1" }, "spec.instanceType"],
    ["empty providerID entry (R8)", { ...base(), providerIDList: [""] }, "spec.providerIDList[0]"],
    [
      "providerID entry over 512 (R8)",
      { ...base(), providerIDList: ["x".repeat(513)] },
      "spec.providerIDList[0]",
    ],
    [
      "providerIDList over 10000 (R8)",
      { ...base(), providerIDList: Array.from({ length: 10001 }, (_, i) => `p${i}`) },
      "spec.providerIDList",
    ],
    ["pool providerID empty (R12)", { ...base(), providerID: "" }, "spec.providerID"],
  ];

  it.each(invalid)("refuses what zod refuses, at the same path (%s)", async (_name, spec, path) => {
    const parsed = Acme.schema.safeParse({
      apiVersion: Acme.apiVersion,
      kind: Acme.kind,
      metadata: { name: "x" },
      spec,
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => k8sPath(i.path))).toContain(path);
    const err = await apiError(() => create(spec));
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.map((c) => c.field)).toContain(path);
  });

  it("status contract fields: accepted when valid, refused at the same path when not", async () => {
    const ok = {
      ready: true,
      initialization: { provisioned: true },
      replicas: 2,
      infrastructureMachineKind: "AcmeMachine",
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "Ready",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
          observedGeneration: 1,
        },
      ],
      groupArn: "arn:acme:1",
    };
    const created = await create(base(), ok);
    const { group, version, plural } = Acme.resource;
    const stored = (await custom.getNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      name: created.metadata.name,
    })) as {
      status: unknown;
    };
    expect(stored.status).toEqual(ok);

    const badStatuses: Array<[Record<string, unknown>, string]> = [
      [{ replicas: -1 }, "status.replicas"],
      // A merge patch removing the only key leaves `initialization: {}` (MinProperties=1, R10).
      [{ initialization: { provisioned: null } }, "status.initialization"],
      [{ infrastructureMachineKind: "" }, "status.infrastructureMachineKind"],
      [
        {
          conditions: [
            {
              type: "Ready",
              status: "Maybe",
              reason: "R",
              message: "",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
        "status.conditions[0].status",
      ],
    ];
    for (const [status, path] of badStatuses) {
      const parsed = Acme.schema.safeParse({
        apiVersion: Acme.apiVersion,
        kind: Acme.kind,
        metadata: {},
        spec: base(),
        status,
      });
      const err = await apiError(() =>
        custom.patchNamespacedCustomObjectStatus(
          { group, version, plural, namespace: ns, name: created.metadata.name, body: { status } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        ),
      );
      expect(err.code, path).toBe(422);
      expect(
        err.status.details?.causes?.map((c) => c.field),
        path,
      ).toContain(path);
      // zod cannot express minProperties; every other refusal is shared.
      if (path !== "status.initialization") {
        expect(
          parsed.error?.issues.map((i) => k8sPath(i.path)),
          path,
        ).toContain(path);
      }
    }
  });

  it("serves every listed version and the template kind", async () => {
    const { group, plural } = Acme.resource;
    for (const version of Acme.versions) {
      const list = (await custom.listNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ns,
      })) as { items: unknown[] };
      expect(list.items.length).toBeGreaterThan(0);
    }
    const t = Acme.templateResource;
    await custom.createNamespacedCustomObject({
      group: t.group,
      version: t.version,
      plural: t.plural,
      namespace: ns,
      body: {
        apiVersion: Acme.apiVersion,
        kind: Acme.templateKind,
        metadata: { name: "tmpl", namespace: ns },
        spec: { template: { spec: base() } },
      },
    });
    const err = await apiError(() =>
      custom.createNamespacedCustomObject({
        group: t.group,
        version: t.version,
        plural: t.plural,
        namespace: ns,
        body: {
          apiVersion: Acme.apiVersion,
          kind: Acme.templateKind,
          metadata: { name: "tmpl-bad", namespace: ns },
          spec: { template: { metadata: {}, spec: { ...base(), providerIDList: [""] } } },
        },
      }),
    );
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.map((c) => c.field)).toEqual(
      expect.arrayContaining(["spec.template.metadata", "spec.template.spec.providerIDList[0]"]),
    );
  });

  it.skipIf(!onReal)(
    "the aggregated ClusterRole installs (real API server only: the in-memory one has no RBAC)",
    async () => {
      const rbac = backend.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      const created = await rbac.createClusterRole({ body: Acme.clusterRole as never });
      expect(created.metadata?.labels?.["cluster.x-k8s.io/aggregate-to-manager"]).toBe("true");
    },
  );
});
