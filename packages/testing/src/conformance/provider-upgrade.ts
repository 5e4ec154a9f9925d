/**
 * The provider upgrade scenario: `clusterctl upgrade apply` from one release of the provider's
 * components to the next, with a pool live, on real core and with the real `clusterctl` of the target
 * release.
 *
 * What is clusterctl's own and what the scenario adds: `clusterctl init` installs the first release
 * (its components, labels and inventory entry) and `clusterctl upgrade apply --infrastructure
 * <name>:<version>` does the upgrade (reads both releases from a local repository, scales the
 * provider's Deployments down, deletes the old components but the CRDs, the Namespace and the
 * inventory, applies the new ones, records the new version). Around it the scenario does what a
 * cluster with a kubelet would: there is none, so Deployments never run Pods; the provider runs as a
 * process next to the suite, stopped before the upgrade and started at the new release after it, and
 * after each apply the components' webhooks (admission, and the CRDs' conversion) are pointed at that
 * process instead of the in-cluster Service. The storage version migration is the provider's (as
 * CAPI's providers run CAPI's `crdmigrator` in their managers): clusterctl v1.14.2 migrates only
 * cert-manager's objects, so the scenario checks that the provider did it.
 *
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeClient } from "@capi-ts/sdk/runtime";
import type { KubeConfig } from "@kubernetes/client-node";
import { findControlPlaneBinaries } from "../controlplane/binaries.js";
import { realCapiRelease } from "../controlplane/capi-core.js";
import { findClusterctlBinary } from "../controlplane/clusterctl.js";
import { runClusterctl, writeClusterctlRepository } from "../controlplane/clusterctl-repository.js";
import { PROVIDER_LIFECYCLE_SCENARIOS, type ProviderLifecycleScenario } from "./scenario-ids.js";
import type {
  ConformanceEnvironment,
  ConformanceKind,
  ConformancePool,
  ConformanceProvider,
  ProviderUpgradeOptions,
} from "./types.js";

/** What the provider upgrade scenario needs of the suite. */
export interface ProviderUpgradeHost {
  /** A client of the management cluster. */
  readonly client: KubeClient;
  /** The management cluster, for clusterctl. */
  readonly kubeConfig: KubeConfig;
  /** What the provider is started with. */
  readonly env: ConformanceEnvironment;
  /** The kind under test. */
  readonly kind: ConformanceKind;
  /** Which core judges: only `real` runs it. */
  readonly core: "emulator" | "real";
  /** The two releases, if the provider gave them. */
  readonly upgrade: ProviderUpgradeOptions | undefined;
  /** Stops the suite's provider, so one controller only runs the kind. */
  stopProvider(): Promise<void>;
  /** Makes `provider` the suite's provider (later scenarios, cleanup). */
  adoptProvider(provider: ConformanceProvider): void;
  /** Creates a pool at the kind's storage version. */
  createPool(replicas: number): Promise<ConformancePool>;
  /** Sets `MachinePool.spec.replicas`. */
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until the pool is converged at `replicas` as core sees it. */
  converged(pool: ConformancePool, replicas: number): Promise<void>;
  /** Deletes the pool and waits until it and its cloud resources are gone. */
  deletePool(pool: ConformancePool): Promise<void>;
  /** Polls `check` (undefined when satisfied, else why not) until it passes; throws the last reason. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
}

/** The scenario: id, title, why it is skipped, body. */
export interface ProviderUpgradeScenarioDef {
  /** Scenario id. */
  readonly id: ProviderLifecycleScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this judge or provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

interface PoolView {
  apiVersion?: string;
  metadata?: { name?: string; uid?: string; annotations?: Record<string, string> };
  spec?: { providerIDList?: string[] } & Record<string, unknown>;
  status?: {
    replicas?: number;
    ready?: boolean;
    initialization?: { provisioned?: boolean };
    conditions?: { type: string; status: string }[];
  } & Record<string, unknown>;
}

interface WebhookConfigurationView {
  metadata: { name: string };
  webhooks?: Array<{
    clientConfig: { url?: string; service?: { path?: string }; caBundle?: string };
  }>;
}

interface CrdView {
  metadata: { name: string };
  spec: {
    versions: { name: string; served: boolean; storage: boolean }[];
    conversion?: {
      strategy?: string;
      webhook?: { clientConfig?: { url?: string; service?: { path?: string } } };
    };
  };
  status?: { storedVersions?: string[] };
}

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WEBHOOK_KINDS = ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"];

function pathOf(url: string | undefined, service: { path?: string } | undefined): string {
  if (service?.path) return service.path;
  return url ? new URL(url).pathname : "/";
}

/**
 * Points the provider's webhooks (labelled `cluster.x-k8s.io/provider=infrastructure-<name>` by
 * clusterctl) at its process: the admission webhook configurations and the CRDs' conversion, each
 * keeping its path, with the process's CA. What a Service and cert-manager's CA injection do in a
 * cluster with a kubelet.
 */
async function pointWebhooksAt(
  client: KubeClient,
  provider: string,
  server: { readonly url: string; readonly caBundle: string },
): Promise<void> {
  const labelSelector = `cluster.x-k8s.io/provider=infrastructure-${provider}`;
  for (const plural of WEBHOOK_KINDS) {
    const base = `/apis/admissionregistration.k8s.io/v1/${plural}`;
    const list = (await client.request({
      method: "GET",
      path: base,
      query: { labelSelector },
    })) as { items: WebhookConfigurationView[] };
    for (const configuration of list.items) {
      for (const webhook of configuration.webhooks ?? []) {
        webhook.clientConfig = {
          url: `${server.url}${pathOf(webhook.clientConfig.url, webhook.clientConfig.service)}`,
          caBundle: server.caBundle,
        };
      }
      await client.request({
        method: "PUT",
        path: `${base}/${configuration.metadata.name}`,
        body: configuration,
      });
    }
  }
  const crds = (await client.request({ method: "GET", path: CRDS, query: { labelSelector } })) as {
    items: CrdView[];
  };
  for (const crd of crds.items) {
    const conversion = crd.spec.conversion;
    if (conversion?.strategy !== "Webhook") continue;
    const clientConfig = conversion.webhook?.clientConfig;
    await client.request({
      method: "PATCH",
      path: `${CRDS}/${crd.metadata.name}`,
      contentType: "application/merge-patch+json",
      body: {
        spec: {
          conversion: {
            webhook: {
              clientConfig: {
                service: null,
                url: `${server.url}${pathOf(clientConfig?.url, clientConfig?.service)}`,
                caBundle: server.caBundle,
              },
            },
          },
        },
      },
    });
  }
}

/** The scenario over `host`. */
export function providerUpgradeScenarios(
  host: () => ProviderUpgradeHost,
): ProviderUpgradeScenarioDef[] {
  return [
    {
      id: "providerUpgrade",
      title: PROVIDER_LIFECYCLE_SCENARIOS[0].title,
      skipReason: () => {
        const h = host();
        if (h.core !== "real") {
          return "needs the real clusterctl against a real kube-apiserver with real core (core: real)";
        }
        if (!h.upgrade) return "no providerUpgrade option (two releases of the provider)";
        if (!findClusterctlBinary(findControlPlaneBinaries())) {
          return `clusterctl ${realCapiRelease()} is not built (run \`./dev controlplane --capi\`)`;
        }
        const from = h.upgrade.from.kind;
        if (from.group !== h.kind.group || from.kind !== h.kind.kind) {
          return `providerUpgrade.from is a ${from.kind}.${from.group}, not the kind under test (${h.kind.kind}.${h.kind.group})`;
        }
        return undefined;
      },
      run: () => providerUpgrade(host()),
    },
  ];
}

function poolPath(kind: ConformanceKind, version: string, pool: ConformancePool): string {
  return `/apis/${kind.group}/${version}/namespaces/${pool.namespace}/${kind.plural}/${pool.name}`;
}

/** What must survive the upgrade of a pool's object. */
function contractStatus(pool: PoolView) {
  return JSON.stringify({
    providerIDList: [...(pool.spec?.providerIDList ?? [])].sort(),
    replicas: pool.status?.replicas,
    ready: pool.status?.ready,
    provisioned: pool.status?.initialization?.provisioned,
    conditions: (pool.status?.conditions ?? []).map((c) => c.type).sort(),
  });
}

async function providerUpgrade(host: ProviderUpgradeHost): Promise<void> {
  const upgrade = host.upgrade as ProviderUpgradeOptions;
  const clusterctl = findClusterctlBinary(findControlPlaneBinaries()) as string;
  const { client, kubeConfig } = host;
  const dir = await mkdtemp(join(tmpdir(), "capi-ts-clusterctl-"));
  const run = async (args: string[]) =>
    runClusterctl(clusterctl, args, {
      repository,
      kubeConfig,
      ...(upgrade.variables ? { variables: upgrade.variables } : {}),
    });
  const repository = await writeClusterctlRepository({
    dir,
    provider: upgrade.provider,
    releases: [upgrade.from, upgrade.to],
  });
  try {
    // One controller for the kind at a time: the suite's provider makes room for the releases'.
    await host.stopProvider();
    await run([
      "init",
      "--core",
      `cluster-api:${realCapiRelease()}`,
      "--bootstrap",
      "-",
      "--control-plane",
      "-",
      "--infrastructure",
      `${upgrade.provider}:${upgrade.from.version}`,
    ]);
    const first = await upgrade.from.startProvider(host.env);
    host.adoptProvider(first);
    if (!first.webhookServer) {
      throw new Error(
        "upgrade.webhooks: the provider at the first release gave no webhookServer (ConformanceProvider.webhookServer), so the components' webhooks cannot reach it",
      );
    }
    await pointWebhooksAt(client, upgrade.provider, first.webhookServer);

    const replicas = 2;
    const pool = await host.createPool(replicas);
    await host.converged(pool, replicas);
    const fromVersion = upgrade.from.kind.storageVersion;
    const before = (await client.request({
      method: "GET",
      path: poolPath(host.kind, fromVersion, pool),
    })) as PoolView;
    const instances = [...(await first.cloud.liveProviderIds(pool))].sort();
    const statusBefore = contractStatus(before);

    await first.stop();
    await run([
      "upgrade",
      "apply",
      "--infrastructure",
      `${upgrade.provider}:${upgrade.to.version}`,
    ]);
    const second = await upgrade.to.startProvider(host.env);
    host.adoptProvider(second);
    if (!second.webhookServer) {
      throw new Error(
        "upgrade.webhooks: the provider at the second release gave no webhookServer (ConformanceProvider.webhookServer)",
      );
    }
    await pointWebhooksAt(client, upgrade.provider, second.webhookServer);

    const inventory = `/apis/clusterctl.cluster.x-k8s.io/v1alpha3/providers`;
    const recorded = (await client.request({ method: "GET", path: inventory })) as {
      items: { providerName?: string; type?: string; version?: string }[];
    };
    const entry = recorded.items.find(
      (p) => p.providerName === upgrade.provider && p.type === "InfrastructureProvider",
    );
    if (entry?.version !== upgrade.to.version) {
      throw new Error(
        `upgrade.inventory: clusterctl's inventory has ${upgrade.provider} at ${entry?.version ?? "no version"}, want ${upgrade.to.version}`,
      );
    }

    const crdName = (upgrade.to.kind.crd.metadata as { name: string }).name;
    const served = (upgrade.to.kind.crd.spec as { versions: { name: string }[] }).versions.map(
      (v) => v.name,
    );
    // Old objects read at every version of the new release (conversion through the provider's webhook).
    await host.until(`${pool.name} to read at ${served.join(" and ")}`, async () => {
      for (const version of served) {
        try {
          const read = (await client.request({
            method: "GET",
            path: poolPath(host.kind, version, pool),
          })) as PoolView;
          if (read.apiVersion !== `${host.kind.group}/${version}`) {
            return `upgrade.readableAtEveryVersion: read at ${version}, got ${read.apiVersion}`;
          }
          if (read.metadata?.uid !== before.metadata?.uid) {
            return `upgrade.readableAtEveryVersion: the pool at ${version} has uid ${read.metadata?.uid}, was ${before.metadata?.uid} (recreated?)`;
          }
          if (contractStatus(read) !== statusBefore) {
            throw new Error(
              `upgrade.statusKept: the pool read at ${version} after the upgrade has ${contractStatus(read)}, before it had ${statusBefore}`,
            );
          }
        } catch (error) {
          if (error instanceof Error && error.message.startsWith("upgrade.statusKept")) throw error;
          return `upgrade.readableAtEveryVersion: GET at ${version}: ${error instanceof Error ? error.message : String(error)}`;
        }
      }
      return undefined;
    });
    const toStorage = upgrade.to.kind.storageVersion;
    await host.until(`${crdName} to be migrated to ${toStorage}`, async () => {
      const crd = (await client.request({ method: "GET", path: `${CRDS}/${crdName}` })) as CrdView;
      const stored = crd.status?.storedVersions ?? [];
      return stored.length === 1 && stored[0] === toStorage
        ? undefined
        : `upgrade.storageMigrated: status.storedVersions is ${JSON.stringify(stored)}, want ["${toStorage}"] (the provider's manager migrates its objects, as CAPI providers' crdmigrator does)`;
    });
    const after = [...(await second.cloud.liveProviderIds(pool))].sort();
    if (JSON.stringify(after) !== JSON.stringify(instances)) {
      throw new Error(
        `upgrade.noInstanceReplaced: instances before ${JSON.stringify(instances)}, after ${JSON.stringify(after)}`,
      );
    }
    await host.converged(pool, replicas);
    const settled = [...(await second.cloud.liveProviderIds(pool))].sort();
    if (JSON.stringify(settled) !== JSON.stringify(instances)) {
      throw new Error(
        `upgrade.noInstanceReplaced: the provider at ${upgrade.to.version} replaced instances: before ${JSON.stringify(instances)}, now ${JSON.stringify(settled)}`,
      );
    }
    await host.setReplicas(pool, replicas + 1);
    await host.converged(pool, replicas + 1);
    await host.deletePool(pool);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
