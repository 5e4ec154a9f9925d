/**
 * How the example provider plugs into the conformance suite of `@capi-ts/testing`: start it against
 * the suite's API server, and show the suite the fake cloud's truth and its out-of-band actors.
 *
 * @module
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type MachinePoolControllerOptions,
  Manager,
  machinePoolController,
  type PoolDriver,
} from "@capi-ts/sdk";
import { ClusterCache, type ClusterCacheTimings } from "@capi-ts/sdk/clustercache";
import { renderComponents } from "@capi-ts/sdk/manifests";
import { KubeClient, silentLogger } from "@capi-ts/sdk/runtime";
import { infraMachinePoolWebhooks, WebhookServer } from "@capi-ts/sdk/webhook";
import {
  applyManifests,
  type ConformanceEnvironment,
  type ConformancePool,
  type ConformanceProvider,
  createTestCertificates,
  type MachinePoolConformanceOptions,
  type ManifestObject,
} from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  bootstrapTokenCheck,
  type FakeCloudOptions,
  FakeScalingCloud,
  nodeRegistrar,
  outdatedScaleSetProviderIds,
  RealClock,
  scaleSetClient,
} from "../cloud/index.js";
import { type FakeCloudGroupSettings, fakeCloudDriver, resourceName } from "./driver.js";
import { FakeCloudMachinePool, fakeCloudKind } from "./kind.js";
import { fakeScaleSetDriver } from "./scaleset-driver.js";
import type { FakeCloudMachinePoolSpec } from "./spec.js";

type Driver = PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>;

/** Options of {@link fakeCloudConformance}. */
export interface FakeCloudConformanceOptions {
  /**
   * Which cloud shape the provider runs on: `template` (default) — scaling groups with launch
   * template versions ({@link fakeCloudDriver}); `scaleSet` — the model inside the group, VMs
   * reporting `latestModelApplied` ({@link fakeScaleSetDriver}, Azure VMSS-shaped).
   */
  shape?: "template" | "scaleSet";
  /** Cloud speed-up over wall time. Default 40 (a 5 s boot takes 125 ms). */
  speed?: number;
  /** Wraps the template driver (the suite's own tests use it to break the provider on purpose). */
  wrapDriver?: (driver: Driver, cloud: FakeScalingCloud) => Driver;
  /** Runs next to the provider (e.g. a misbehaving extra writer); returns its stop function. */
  sidecar?: (env: ConformanceEnvironment, cloud: FakeScalingCloud) => () => void;
  /**
   * Fake cloud options over the hook's (random faults, timing in cloud milliseconds: at the default
   * speed 40, `timing.joinMs: 20_000` is a 500 ms Node join delay).
   */
  cloud?: Omit<FakeCloudOptions, "clock" | "kubelet">;
  /** Controller tuning. */
  controller?: Partial<
    Omit<MachinePoolControllerOptions<FakeCloudMachinePoolSpec>, "manager" | "kind">
  >;
  /**
   * Run the manager without the suite's watch filter (the suite's own test of `runtime.watchFilter`
   * uses it to play a provider that ignores the filter).
   */
  ignoreWatchFilter?: boolean;
  /**
   * Timings of a {@link ClusterCache} built for the provider and passed to the kit (the suite's own
   * tests use it to play a provider that retries an unreachable workload cluster without backoff).
   * Default: the kit's own, with default timings.
   */
  clusterCache?: ClusterCacheTimings;
  /**
   * MachinePool Machines (R11): the kit keeps a `FakeCloudMachinePoolMachine` per instance and
   * deletes instances through core's Machines; the suite adds its MachinePool Machines scenarios.
   */
  machinePoolMachines?: boolean;
  /**
   * Serve the kind's admission webhooks (`infraMachinePoolWebhooks`: validation, `minSize` ≤ `maxSize`,
   * and the template's immutability with the topology dry-run exception, R19) from this process, and
   * register them with the suite's API server through the rendered ValidatingWebhookConfiguration,
   * pointed at 127.0.0.1. Only a real kube-apiserver calls webhooks (`core: "real"`): there, every
   * write of the kind and its template (core's topology controller's server-side applies and their dry
   * runs included) goes through them.
   */
  webhooks?: boolean;
  /** Suite options to override (scenarios, timeouts). */
  suite?: Partial<MachinePoolConformanceOptions>;
}

/** A webhook server for the kind, registered with the API server of `env`; returns its stop function. */
async function serveWebhooks(env: ConformanceEnvironment): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), "capi-ts-fakecloud-webhooks-"));
  const certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
  await certs.writeTo(dir);
  const server = new WebhookServer({
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
  const configuration = structuredClone(
    renderComponents({
      name: "fakecloud",
      kinds: [FakeCloudMachinePool],
      image: "ghcr.io/capi-ts/fakecloud-provider:test",
    }).find((object) => object.kind === "ValidatingWebhookConfiguration") as ManifestObject,
  );
  for (const webhook of configuration.webhooks as Array<{
    clientConfig: Record<string, unknown>;
  }>) {
    const { path } = webhook.clientConfig.service as { path: string };
    webhook.clientConfig = { url: `https://127.0.0.1:${port}${path}`, caBundle: certs.caBundle };
  }
  await applyManifests(env.kubeConfig, [configuration]);
  // The configuration takes a moment to reach the API server's admission chain: wait until a pool the
  // webhook refuses is refused (a dry run: nothing is stored).
  const client = new KubeClient(env.kubeConfig, { fieldManager: "fakecloud-webhooks" });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const refused = await client
      .create(
        FakeCloudMachinePool.resource,
        {
          apiVersion: FakeCloudMachinePool.apiVersion,
          kind: FakeCloudMachinePool.kind,
          metadata: { name: "webhook-probe", namespace: "default" },
          spec: { instanceType: "small", minSize: 3, maxSize: 1 },
        } as KubernetesObject,
        { dryRun: true },
      )
      .then(
        () => false,
        (error: unknown) => String(error).includes("must not exceed"),
      );
    if (refused) break;
    if (Date.now() > deadline) {
      throw new Error(
        "fakeCloudConformance: the API server never called the kind's webhooks within 30 s",
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const name = configuration.metadata.name;
  return async () => {
    await client
      .request({
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${name}`,
      })
      .catch(() => undefined);
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}

const group = (pool: ConformancePool): string => resourceName({ ...pool, uid: "" });

/**
 * Conformance options for `FakeCloudMachinePool`: pass them to `runMachinePoolConformance`.
 *
 * @example
 * ```ts
 * runMachinePoolConformance(fakeCloudConformance());
 * ```
 */
export function fakeCloudConformance(
  options: FakeCloudConformanceOptions = {},
): MachinePoolConformanceOptions {
  const identity = "fakecloud-provider";
  const kind = fakeCloudKind({ machinePoolMachines: options.machinePoolMachines ?? false });
  /** Starts the example's manager on `env`'s management cluster, driving `cloud`; resolves to its stop. */
  const startManager = async (
    env: ConformanceEnvironment,
    cloud: FakeScalingCloud,
    clock: RealClock,
  ): Promise<() => Promise<void>> => {
    const driverOptions = {
      defaultZones: ["zone-a", "zone-b"],
      busyRetryMs: 100,
      launchTime: (ms: number) => clock.wallTimeOf(ms),
    };
    const scaleSet = options.shape === "scaleSet";
    const plain = fakeCloudDriver(cloud.client, driverOptions);
    const driver = scaleSet
      ? fakeScaleSetDriver(scaleSetClient(cloud), driverOptions)
      : options.wrapDriver
        ? options.wrapDriver(plain, cloud)
        : plain;
    const manager = new Manager({
      kubeConfig: env.kubeConfig,
      name: identity,
      logger: { level: "silent" },
      ...(options.ignoreWatchFilter ? {} : { watchFilterValue: env.watchFilterValue }),
      gracefulShutdownTimeoutMs: 2000,
    });
    machinePoolController(driver, {
      pollIntervalMs: 50,
      resyncPeriodMs: 500,
      // Count an instance available once its Node is Ready, so a rollout never drops Ready Nodes.
      readiness: "node",
      ...(options.clusterCache
        ? { clusterCache: new ClusterCache(manager, options.clusterCache) }
        : {}),
      ...options.controller,
      manager,
      kind,
    });
    const running = manager.start();
    await manager.elected();
    return async () => {
      await manager.stop();
      await running.catch(() => undefined);
    };
  };
  /** The cloud of each provider the suite started, for the target of a move. */
  const clouds = new WeakMap<ConformanceProvider, { cloud: FakeScalingCloud; clock: RealClock }>();
  return {
    name: `${FakeCloudMachinePool.kind}${options.shape === "scaleSet" ? " (scale-set cloud)" : ""}${options.machinePoolMachines ? " with MachinePool Machines" : ""}`,
    kind,
    poolSpec: { instanceType: "small", minSize: 0, maxSize: 10 },
    templateChange: (spec) => ({ ...spec, instanceType: "medium" }),
    // The scale-set flavour of the fake cloud has no spot capacity.
    ...(options.shape === "scaleSet"
      ? {}
      : { interruptibleSpec: (spec) => ({ ...spec, spot: true }) }),
    // Another size and architecture: the capacity and nodeInfo the autoscaler reads both change.
    capacityChange: (spec) => ({ ...spec, instanceType: "arm-medium" }),
    async startProvider(env): Promise<ConformanceProvider> {
      const stopWebhooks =
        options.webhooks && env.core === "real" ? await serveWebhooks(env) : undefined;
      const clock = new RealClock({ speed: options.speed ?? 40 });
      const cloud = new FakeScalingCloud({
        clock,
        seed: 11,
        ...options.cloud,
        kubelet: nodeRegistrar({
          kubeConfig: env.workloadKubeConfig,
          canJoin: bootstrapTokenCheck(env.kubeConfig),
        }),
      });
      const stopManager = await startManager(env, cloud, clock);
      const scaleSet = options.shape === "scaleSet";
      const stopSidecar = options.sidecar?.(env, cloud);
      const provider: ConformanceProvider = {
        identity,
        cloud: {
          liveProviderIds: (pool) => cloud.inspect.providerIds(group(pool)),
          callCount: (filter = {}) =>
            cloud
              .calls(filter.mutating === undefined ? {} : { mutating: filter.mutating })
              .filter(
                (c) =>
                  !filter.resizes ||
                  c.operation === "setDesiredCapacity" ||
                  (c.operation === "updateGroup" &&
                    (c.args[1] as { desiredCapacity?: number }).desiredCapacity !== undefined),
              ).length,
          failedCallCount: () => cloud.calls({ outcome: "error" }).length,
          outdatedProviderIds: (pool) => {
            if (scaleSet) return outdatedScaleSetProviderIds(cloud, group(pool));
            const latest = cloud.inspect
              .templates()
              .find((t) => t.name === group(pool))?.latestVersion;
            const outdated = cloud.inspect
              .instances({ group: group(pool) })
              .filter((i) => i.state !== "terminated" && i.templateVersion !== latest)
              .map((i) => i.id);
            return cloud.inspect
              .providerIds(group(pool))
              .filter((id) => outdated.some((o) => id.endsWith(`/${o}`)));
          },
          groupBounds: (pool) => {
            const found = cloud.inspect.group(group(pool));
            return found && { min: found.minSize, max: found.maxSize };
          },
          templateVersionCount: (pool) =>
            cloud.inspect.templates().find((t) => t.name === group(pool))?.latestVersion ?? 0,
          resourcesLeft: (pool) => [
            ...(cloud.inspect.group(group(pool)) ? [`group ${group(pool)}`] : []),
            ...cloud.inspect
              .templates()
              .filter((t) => t.name === group(pool))
              .map((t) => `template ${t.name}`),
            ...cloud.inspect.providerIds(group(pool)).map((id) => `instance ${id}`),
          ],
          actors: {
            setDesiredReplicas: (pool, replicas) =>
              cloud.actors.setDesiredCapacity(group(pool), replicas),
            terminateInstance: (_pool, providerID) =>
              cloud.actors.terminateInstance(providerID.slice(providerID.lastIndexOf("/") + 1)),
            interruptSpot: (_pool, providerID) =>
              cloud.actors.interruptSpot(providerID.slice(providerID.lastIndexOf("/") + 1)),
            throttle: (calls) =>
              void cloud.faults.inject({ kind: "throttle", times: calls, retryAfterMs: 500 }),
            setNodeJoinDelay: (ms) =>
              cloud.actors.setJoinDelay(ms === undefined ? undefined : ms * (options.speed ?? 40)),
          },
        },
        async stop() {
          stopSidecar?.();
          await stopManager();
          clock.dispose();
          await cloud.flush();
          await stopWebhooks?.();
        },
      };
      clouds.set(provider, { cloud, clock });
      return provider;
    },
    // The target of a move runs the example's manager on the source's cloud; it stops only itself.
    move: {
      async startTargetProvider(env, source): Promise<ConformanceProvider> {
        const shared = clouds.get(source);
        if (!shared) {
          throw new Error(
            "fakeCloudConformance: the move's source is not a provider these options started",
          );
        }
        const stopManager = await startManager(env, shared.cloud, shared.clock);
        return { identity, cloud: source.cloud, stop: stopManager };
      },
    },
    timeouts: { steadyStateMs: 800, settleMs: 250 },
    ...options.suite,
  };
}
