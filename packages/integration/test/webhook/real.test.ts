// On a real kube-apiserver: the rendered infrastructure-components.yaml is accepted (server-side apply
// with strict field validation; cert-manager kinds against stand-in CRDs), and the API server itself
// calls the provider's webhook server on 127.0.0.1 through a real ValidatingWebhookConfiguration:
// invalid pools are rejected, template specs are immutable, and a topology dry run (R19) passes.
// Skipped, loudly, without the control plane binaries (./dev controlplane or KUBEBUILDER_ASSETS).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeCloudMachinePool } from "@capi-ts/examples";
import { componentsYAML, metadataYAML, renderComponents } from "@capi-ts/sdk/manifests";
import { KubeClient, silentLogger } from "@capi-ts/sdk/runtime";
import { infraMachinePoolWebhooks, WebhookServer } from "@capi-ts/sdk/webhook";
import {
  applyManifests,
  type ControlPlane,
  certManagerStandInCrdsFolder,
  createTestCertificates,
  findControlPlaneBinaries,
  type ManifestObject,
  startControlPlane,
} from "@capi-ts/testing";
import { loadAll } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const binaries = findControlPlaneBinaries();
if (!binaries) {
  console.warn(
    "\n!!! SKIPPED: webhook and components tests on a real kube-apiserver (no binaries). Set KUBEBUILDER_ASSETS.\n",
  );
}

const components = renderComponents({
  name: "fakecloud",
  kinds: [FakeCloudMachinePool],
  image: "ghcr.io/capi-ts/fakecloud-provider:v0.1.0",
});

describe.skipIf(!binaries)("a real kube-apiserver", () => {
  let plane: ControlPlane;
  let server: WebhookServer;
  let dir: string;
  let client: KubeClient;

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig, { fieldManager: "webhook-test" });
    dir = await mkdtemp(join(tmpdir(), "capi-ts-webhook-real-"));
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    await plane?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("accepts every object of infrastructure-components.yaml (server-side apply, strict)", async () => {
    await plane.installCRDs([certManagerStandInCrdsFolder]);
    // Round-trip through the YAML the release ships, not the in-memory objects.
    const objects = loadAll(componentsYAML(components)) as ManifestObject[];
    expect(objects.map((object) => object.kind)).toEqual([
      "Namespace",
      "CustomResourceDefinition",
      "CustomResourceDefinition",
      "ClusterRole",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "Role",
      "RoleBinding",
      "Deployment",
      "Service",
      "Issuer",
      "Certificate",
      "ValidatingWebhookConfiguration",
    ]);
    for (const object of objects) {
      expect(object.metadata).toMatchObject({
        labels: { "cluster.x-k8s.io/provider": "infrastructure-fakecloud" },
      });
    }
    // The webhook configuration points at a Service no pod backs here: dry-run it, or every later
    // FakeCloudMachinePool write would fail closed.
    const applied = await applyManifests(plane.kubeConfig, objects, {
      dryRun: (object) => object.kind.endsWith("WebhookConfiguration"),
    });
    expect(applied).toHaveLength(objects.length);
    const deployment = (await client.request({
      method: "GET",
      path: "/apis/apps/v1/namespaces/fakecloud-provider-system/deployments/fakecloud-provider-controller-manager",
    })) as { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } };
    expect(deployment.spec.template.spec.containers[0]?.args).toContain("--leader-elect");
    expect(metadataYAML([{ major: 0, minor: 1, contract: "v1beta2" }])).toContain(
      "contract: v1beta2",
    );
  });

  it("rejects a bad field in a rendered object (strict validation is on)", async () => {
    const broken = structuredClone(
      components.find((object) => object.kind === "Service") as ManifestObject,
    );
    (broken.spec as Record<string, unknown>).portz = [];
    await expect(applyManifests(plane.kubeConfig, [broken])).rejects.toThrow(
      /Service fakecloud-provider-system\/fakecloud-provider-webhook-service was rejected: .*portz/,
    );
  });

  it("calls the webhook server: invalid pools are rejected, template specs immutable, topology dry runs pass", async () => {
    const certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
    await certs.writeTo(dir);
    server = new WebhookServer({
      certDir: dir,
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger(),
    });
    server.register(
      infraMachinePoolWebhooks(FakeCloudMachinePool, {
        validate: (spec) =>
          spec.minSize > spec.maxSize
            ? [
                `spec.minSize: Invalid value: ${spec.minSize}: must not exceed spec.maxSize (${spec.maxSize})`,
              ]
            : [],
      }),
    );
    await server.start();
    const port = server.address()?.port;
    // The rendered configuration, pointed at this process instead of the in-cluster Service.
    const configuration = structuredClone(
      components.find(
        (object) => object.kind === "ValidatingWebhookConfiguration",
      ) as ManifestObject,
    );
    for (const webhook of configuration.webhooks as Array<{
      clientConfig: Record<string, unknown>;
    }>) {
      const { path } = webhook.clientConfig.service as { path: string };
      webhook.clientConfig = { url: `https://127.0.0.1:${port}${path}`, caBundle: certs.caBundle };
    }
    await applyManifests(plane.kubeConfig, [configuration]);

    const pool = (name: string, minSize: number, maxSize: number) => ({
      apiVersion: FakeCloudMachinePool.apiVersion,
      kind: "FakeCloudMachinePool",
      metadata: { name, namespace: "default" },
      spec: { instanceType: "small", minSize, maxSize },
    });
    // The configuration takes a moment to reach the API server's admission chain.
    await expect
      .poll(
        async () => {
          try {
            await client.create(FakeCloudMachinePool.resource, pool("probe", 3, 1), {
              dryRun: true,
            });
            return "admitted";
          } catch (error) {
            return (error as Error).message;
          }
        },
        { timeout: 20_000, interval: 200 },
      )
      .toContain("must not exceed");
    await expect(client.create(FakeCloudMachinePool.resource, pool("bad", 5, 1))).rejects.toThrow(
      'admission webhook "validation.fakecloudmachinepool.infrastructure.cluster.x-k8s.io" denied the request: FakeCloudMachinePool "bad" is invalid: spec.minSize: Invalid value: 5: must not exceed spec.maxSize (1)',
    );
    await client.create(FakeCloudMachinePool.resource, pool("good", 0, 3));

    const template = (instanceType: string, annotations?: Record<string, string>) => ({
      apiVersion: FakeCloudMachinePool.apiVersion,
      kind: "FakeCloudMachinePoolTemplate",
      metadata: { name: "tpl", namespace: "default", ...(annotations ? { annotations } : {}) },
      spec: { template: { spec: { instanceType, minSize: 0, maxSize: 3 } } },
    });
    await client.apply(FakeCloudMachinePool.templateResource, template("small"), { force: true });
    await expect(
      client.apply(FakeCloudMachinePool.templateResource, template("large"), { force: true }),
    ).rejects.toThrow("spec.template.spec field is immutable");
    // What the topology controller does to compute a diff: an SSA dry run with the annotation (R19).
    await client.apply(
      FakeCloudMachinePool.templateResource,
      template("large", { "topology.cluster.x-k8s.io/dry-run": "" }),
      { force: true, dryRun: true },
    );
  }, 60_000);
});
