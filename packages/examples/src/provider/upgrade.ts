/**
 * Two releases of the example provider, for `clusterctl upgrade` (the conformance suite's
 * `providerUpgrade` scenario): `v0.1.0` ships `FakeCloudMachinePool` as the example defines it (one
 * version, `v1beta2`); `v0.2.0` adds `v1beta3`, which holds one more field (`rootVolumeGiB`), and makes
 * it the storage version, the hub, with `v1beta2` a spoke. Each release's components are rendered
 * with `renderComponents` and `metadataYAML`, as a release of the scaffold is.
 *
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Manager, machinePoolController, type PoolDriver } from "@capi-ts/sdk";
import {
  defineInfraMachinePool,
  type InfraMachinePoolContent,
  storageVersionMigrator,
} from "@capi-ts/sdk/crd";
import { componentsYAML, metadataYAML, renderComponents } from "@capi-ts/sdk/manifests";
import { silentLogger } from "@capi-ts/sdk/runtime";
import {
  CONVERSION_WEBHOOK_PATH,
  conversionWebhook,
  infraMachinePoolWebhooks,
  WebhookServer,
} from "@capi-ts/sdk/webhook";
import {
  type ConformanceEnvironment,
  type ConformancePool,
  type ConformanceProvider,
  createTestCertificates,
  type ProviderRelease,
  type ProviderUpgradeOptions,
} from "@capi-ts/testing";
import { z } from "zod";
import { bootstrapTokenCheck, FakeScalingCloud, nodeRegistrar, RealClock } from "../cloud/index.js";
import { type FakeCloudGroupSettings, fakeCloudDriver, resourceName } from "./driver.js";
import { FakeCloudMachinePool } from "./kind.js";
import { type FakeCloudMachinePoolSpec, FakeCloudMachinePoolSpecSchema } from "./spec.js";

/** The provider's name for clusterctl (`clusterctl init --infrastructure fakecloud`). */
export const FAKECLOUD_PROVIDER_NAME = "fakecloud";

/** The spec at `v1beta3`: `v1beta2`'s and the root volume size, which `v1beta2` cannot hold. */
const hubSpec = FakeCloudMachinePoolSpecSchema.safeExtend({
  rootVolumeGiB: z.number().int().min(8).optional(),
});
type HubSpec = z.output<typeof hubSpec>;
type Hub = InfraMachinePoolContent<HubSpec>;
type Spoke = { spec: z.output<typeof FakeCloudMachinePoolSpecSchema>; status?: Hub["status"] };

/**
 * `FakeCloudMachinePool` of release `v0.2.0`: served at `v1beta2` and `v1beta3`, stored at `v1beta3`
 * (the hub). A pool read at `v1beta2` loses `rootVolumeGiB` into the conversion-data annotation and
 * gets it back when written again at `v1beta2` unchanged.
 *
 * @example
 * ```ts
 * expectLosslessConversion(FakeCloudMachinePoolV0_2, { random: { count: 50 } });
 * ```
 */
export const FakeCloudMachinePoolV0_2 = defineInfraMachinePool({
  group: FakeCloudMachinePool.group,
  kind: FakeCloudMachinePool.kind,
  versions: ["v1beta2", "v1beta3"],
  storageVersion: "v1beta3",
  spec: hubSpec,
  shortNames: ["fcmp"],
  description: "A pool of instances in the fake scaling-group cloud, managed as one scaling group.",
  spokes: {
    v1beta2: {
      spec: FakeCloudMachinePoolSpecSchema,
      toHub(spoke: Spoke, { restored }): Hub {
        // Whoever may edit the pool may edit the annotation `restored` comes from: take only a value
        // the hub's schema accepts (the SDK refuses a hub that breaks it, this drops it instead).
        const parsed = hubSpec.shape.rootVolumeGiB.safeParse(restored?.spec.rootVolumeGiB);
        const volume = parsed.success ? parsed.data : undefined;
        return {
          spec: { ...spoke.spec, ...(volume !== undefined ? { rootVolumeGiB: volume } : {}) },
          ...(spoke.status ? { status: spoke.status } : {}),
        };
      },
      fromHub(hub): Spoke {
        const { rootVolumeGiB: _volume, ...spec } = hub.spec;
        return { spec, ...(hub.status ? { status: hub.status } : {}) };
      },
    },
  },
});

/** What a release of the example is: its version, its kind and what the release files render to. */
interface ExampleRelease {
  readonly version: string;
  readonly kind: typeof FakeCloudMachinePool | typeof FakeCloudMachinePoolV0_2;
}

const RELEASES: readonly ExampleRelease[] = [
  { version: "v0.1.0", kind: FakeCloudMachinePool },
  { version: "v0.2.0", kind: FakeCloudMachinePoolV0_2 },
];

const IMAGE = "ghcr.io/capi-ts/fakecloud-provider";

/** `infrastructure-components.yaml` of one release of the example. */
export function fakeCloudReleaseComponents(version: "v0.1.0" | "v0.2.0"): string {
  const release = RELEASES.find((r) => r.version === version) as ExampleRelease;
  return componentsYAML(
    renderComponents({
      name: FAKECLOUD_PROVIDER_NAME,
      kinds: [release.kind],
      image: `${IMAGE}:${version}`,
    }),
  );
}

/** `metadata.yaml` of the example's releases: series 0.1 and 0.2 on contract v1beta2. */
export function fakeCloudReleaseMetadata(): string {
  return metadataYAML([
    { major: 0, minor: 1, contract: "v1beta2" },
    { major: 0, minor: 2, contract: "v1beta2" },
  ]);
}

type AnyDriver = PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>;

/** The cloud both releases run on: made by the first start, kept by the second. */
interface SharedCloud {
  readonly cloud: FakeScalingCloud;
  readonly clock: RealClock;
}

/**
 * Starts the example's manager at `release`: the kit on the shared cloud, a webhook server on
 * 127.0.0.1 with the kind's admission webhooks (and, with more than one version, the conversion
 * webhook), and the storage version migration.
 */
async function startRelease(
  env: ConformanceEnvironment,
  release: ExampleRelease,
  shared: SharedCloud,
): Promise<ConformanceProvider> {
  const identity = "fakecloud-provider";
  const dir = await mkdtemp(join(tmpdir(), "capi-ts-fakecloud-release-"));
  const certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
  await certs.writeTo(dir);
  const manager = new Manager({
    kubeConfig: env.kubeConfig,
    name: identity,
    logger: { level: "silent" },
    watchFilterValue: env.watchFilterValue,
    gracefulShutdownTimeoutMs: 2000,
  });
  const server = new WebhookServer({
    certDir: dir,
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger(),
  });
  const validate = (spec: FakeCloudMachinePoolSpec) =>
    spec.minSize > spec.maxSize
      ? [
          `spec.minSize: Invalid value: ${spec.minSize}: must not exceed spec.maxSize (${spec.maxSize})`,
        ]
      : [];
  server.register(
    release.kind === FakeCloudMachinePool
      ? infraMachinePoolWebhooks(FakeCloudMachinePool, { validate })
      : infraMachinePoolWebhooks(FakeCloudMachinePoolV0_2, { validate }),
  );
  server.register(CONVERSION_WEBHOOK_PATH, conversionWebhook([release.kind]));
  // Started before the manager, not as one of its runnables: the caches of a kind stored at an older
  // version sync only once the API server reaches this conversion webhook, which the caller points
  // here after this returns.
  await server.start();
  if (release.kind.versions.length > 1) {
    manager.add(
      storageVersionMigrator({
        client: manager.client,
        kinds: [release.kind],
        logger: manager.logger,
      }),
    );
  }
  const { cloud, clock } = shared;
  const driver: AnyDriver = fakeCloudDriver(cloud.client, {
    defaultZones: ["zone-a", "zone-b"],
    busyRetryMs: 100,
    launchTime: (ms: number) => clock.wallTimeOf(ms),
  });
  machinePoolController(driver, {
    pollIntervalMs: 50,
    resyncPeriodMs: 500,
    readiness: "node",
    manager,
    // The hub's spec is v1beta2's and one field the fake cloud does not use: the driver reads the rest.
    kind: release.kind as typeof FakeCloudMachinePool,
  });
  const running = manager.start();
  const port = server.address()?.port;
  const group = (pool: ConformancePool): string => resourceName({ ...pool, uid: "" });
  return {
    identity,
    webhookServer: { url: `https://127.0.0.1:${port}`, caBundle: certs.caBundle },
    cloud: {
      liveProviderIds: (pool) => cloud.inspect.providerIds(group(pool)),
      callCount: (filter = {}) =>
        cloud.calls(filter.mutating === undefined ? {} : { mutating: filter.mutating }).length,
      failedCallCount: () => cloud.calls({ outcome: "error" }).length,
      resourcesLeft: (pool) => [
        ...(cloud.inspect.group(group(pool)) ? [`group ${group(pool)}`] : []),
        ...cloud.inspect.providerIds(group(pool)).map((id) => `instance ${id}`),
      ],
    },
    async stop() {
      await manager.stop();
      await running.catch(() => undefined);
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The `providerUpgrade` option of the conformance suite for the example: release `v0.1.0` to
 * `v0.2.0`, both on one fake cloud (the instances must survive the upgrade), each started as the
 * release's manager with its webhooks on 127.0.0.1.
 *
 * @example
 * ```ts
 * runMachinePoolConformance(fakeCloudConformance({ suite: { core: "real", providerUpgrade: fakeCloudUpgrade(), scenarios: ["providerUpgrade"] } }));
 * ```
 */
export function fakeCloudUpgrade(
  options: { readonly speed?: number } = {},
): ProviderUpgradeOptions {
  const speed = options.speed ?? 40;
  let shared: SharedCloud | undefined;
  const sharedCloud = (env: ConformanceEnvironment): SharedCloud => {
    if (!shared) {
      const clock = new RealClock({ speed });
      const cloud = new FakeScalingCloud({
        clock,
        seed: 23,
        kubelet: nodeRegistrar({
          kubeConfig: env.workloadKubeConfig,
          canJoin: bootstrapTokenCheck(env.kubeConfig),
        }),
      });
      shared = { cloud, clock };
    }
    return shared;
  };
  const release = (r: ExampleRelease): ProviderRelease => ({
    version: r.version,
    kind: r.kind,
    components: fakeCloudReleaseComponents(r.version as "v0.1.0" | "v0.2.0"),
    metadata: fakeCloudReleaseMetadata(),
    startProvider: (env) => startRelease(env, r, sharedCloud(env)),
  });
  return {
    provider: FAKECLOUD_PROVIDER_NAME,
    from: release(RELEASES[0] as ExampleRelease),
    to: release(RELEASES[1] as ExampleRelease),
    async dispose() {
      shared?.clock.dispose();
      await shared?.cloud.flush();
      shared = undefined;
    },
  };
}
