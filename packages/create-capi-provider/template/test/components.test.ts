// The release's infrastructure-components.yaml on a real kube-apiserver: every object is accepted
// (server-side apply, strict field validation), and the API server calls this provider's webhook
// server (on 127.0.0.1, the rendered ValidatingWebhookConfiguration pointed at it), which rejects an
// invalid FooMachinePool. Needs kube-apiserver and etcd: set KUBEBUILDER_ASSETS (skipped otherwise).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Manifest } from "@capi-ts/sdk";
import { componentsYAML, substituteClusterctlVariables } from "@capi-ts/sdk/manifests";
import { KubeClient, silentLogger } from "@capi-ts/sdk/runtime";
import { infraMachinePoolWebhooks, WebhookServer } from "@capi-ts/sdk/webhook";
import {
  applyManifests,
  certManagerStandInCrdsFolder,
  createTestCertificates,
  findControlPlaneBinaries,
  type ManifestObject,
  startControlPlane,
} from "@capi-ts/testing";
import { loadAll } from "js-yaml";
import { expect, it } from "vitest";
import { FooMachinePool, validateFooMachinePoolSpec } from "../src/kind.js";
import { components } from "../src/manifests.js";

const binaries = findControlPlaneBinaries();

it.skipIf(!binaries)(
  "applies to a real kube-apiserver, whose webhook calls reject an invalid pool",
  { timeout: 240_000 },
  async () => {
    const plane = await startControlPlane();
    const dir = await mkdtemp(join(tmpdir(), "foo-provider-webhook-"));
    const server = new WebhookServer({
      certDir: dir,
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger(),
    });
    try {
      await plane.installCRDs([certManagerStandInCrdsFolder]);
      // As `clusterctl init` gets it: every variable substituted (the defaults, and the credentials).
      const objects = loadAll(
        substituteClusterctlVariables(
          componentsYAML(components("ghcr.io/acme/foo-provider:v0.1.0")),
          {
            FOO_B64ENCODED_ENDPOINT: Buffer.from("https://api.foo.example").toString("base64"),
            FOO_B64ENCODED_TOKEN: Buffer.from("test-token").toString("base64"),
          },
        ),
      ) as ManifestObject[];
      const isWebhookConfiguration = (object: { kind: string }) =>
        object.kind.endsWith("WebhookConfiguration");
      // The configuration names an in-cluster Service no pod backs here: dry-run it as rendered.
      await applyManifests(plane.kubeConfig, objects, { dryRun: isWebhookConfiguration });

      const certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
      await certs.writeTo(dir);
      server.register(
        infraMachinePoolWebhooks(FooMachinePool, { validate: validateFooMachinePoolSpec }),
      );
      await server.start();
      const configuration = structuredClone(objects.find(isWebhookConfiguration) as Manifest);
      for (const webhook of configuration.webhooks as Array<{
        clientConfig: Record<string, unknown>;
      }>) {
        const { path } = webhook.clientConfig.service as { path: string };
        webhook.clientConfig = {
          url: `https://127.0.0.1:${server.address()?.port}${path}`,
          caBundle: certs.caBundle,
        };
      }
      await applyManifests(plane.kubeConfig, [configuration as ManifestObject]);

      const client = new KubeClient(plane.kubeConfig, { fieldManager: "components-test" });
      const pool = (minSize: number, maxSize: number) => ({
        apiVersion: FooMachinePool.apiVersion,
        kind: FooMachinePool.kind,
        metadata: { name: "pool-a", namespace: "default" },
        spec: { instanceType: "small", minSize, maxSize },
      });
      await expect
        .poll(
          () =>
            client.create(FooMachinePool.resource, pool(3, 1), { dryRun: true }).then(
              () => "admitted",
              (error: Error) => error.message,
            ),
          { timeout: 20_000, interval: 200 },
        )
        .toContain('denied the request: FooMachinePool "pool-a" is invalid: spec.minSize');
      await client.create(FooMachinePool.resource, pool(0, 3));
    } finally {
      await server.stop();
      await plane.stop();
      await rm(dir, { recursive: true, force: true });
    }
  },
);
