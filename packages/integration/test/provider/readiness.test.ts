import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventResource, SecretResource } from "@capi-ts/sdk/runtime";
import { markWorkloadClusterReady, scaled } from "@capi-ts/testing";
import { dump } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  Clusters,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  ns,
  Pools,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({
    controller: { readiness: "node" },
    // Instances booted from a "broken" image run but their kubelet never joins.
    canJoin: (boot, cloud) => {
      const template = cloud.inspect.templates().find((t) => t.name === boot.groupName);
      const version = template?.versions.find((v) => v.version === boot.templateVersion);
      return version?.image !== "broken-image";
    },
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("machinePoolController with readiness: node", { timeout: scaled(40_000) }, () => {
  it("counts an instance as available only once its Node is Ready", async () => {
    const name = await createPool(bed, { replicas: 2 });
    const pool = await converged(bed, name, 2);
    const running = bed.cloud.inspect.instances({ group: groupName(name), states: ["running"] });
    expect(running.every((i) => i.kubelet === "joined")).toBe(true);
    expect(pool.status?.ready).toBe(true);
  });

  it("halts a rollout whose new instances never join: the old ones stay (no outage)", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const group = groupName(name);
    const old = bed.cloud.inspect.instances({ group, states: ["running"] }).map((i) => i.id);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { image: "broken-image" } },
    );
    await eventually(() => {
      const booted = bed.cloud.inspect
        .instances({ group, states: ["running"] })
        .filter((i) => !old.includes(i.id));
      expect(booted.length).toBeGreaterThan(0);
      expect(booted.every((i) => i.kubelet === "rejected")).toBe(true);
    });
    await sleep(1500);
    const live = bed.cloud.inspect.instances({ group, states: ["running"] }).map((i) => i.id);
    expect(old.every((id) => live.includes(id))).toBe(true);
    expect(live.length).toBeLessThanOrEqual(3);
    const ready = condition(await getPool(bed, name), "Ready");
    expect(ready).toMatchObject({ status: "False", reason: "RollingOut" });
    expect(ready?.message).toContain("waiting for new instances to become available");
    // Fixing the image rolls on: the broken surge instance is outdated too and goes first.
    await bed.client.mergePatch(Pools, { namespace: ns, name }, { spec: { image: "good-image" } });
    await eventually(async () => {
      const now = bed.cloud.inspect.instances({ group, states: ["running"] });
      expect(now.some((i) => old.includes(i.id))).toBe(false);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    await converged(bed, name, 2);
  });

  it("names an unreachable workload cluster on Ready, scales but holds a rollout, and recovers once the kubeconfig Secret is written", async () => {
    const cluster = "c-unreachable";
    await bed.client.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: cluster, namespace: ns },
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevCluster",
          name: cluster,
        },
      },
    });
    // Provisioned, but no kubeconfig Secret yet: neither core nor the kit can reach its Nodes.
    await markWorkloadClusterReady(
      bed.client,
      { namespace: ns, name: cluster },
      bed.client.kubeConfig,
      {
        kubeconfigSecret: false,
      },
    );
    const name = await createPool(bed, { replicas: 2, clusterName: cluster });
    const group = groupName(name, cluster);
    // No deadlock: the group is created and scaled, and the pool reports provisioned on instances.
    await eventually(async () => {
      const pool = await getPool(bed, name);
      expect(bed.cloud.inspect.instances({ group, states: ["running"] })).toHaveLength(2);
      expect(pool.status?.ready).toBe(true);
      expect(condition(pool, "Ready")).toMatchObject({
        status: "False",
        reason: "WorkloadClusterUnreachable",
      });
      expect(condition(pool, "Ready")?.message).toContain("KubeconfigSecretNotFound");
      expect(condition(pool, "Ready")?.message).toContain(`${cluster}-kubeconfig`);
    });
    const old = bed.cloud.inspect.instances({ group, states: ["running"] }).map((i) => i.id);
    await bed.client.mergePatch(Pools, { namespace: ns, name }, { spec: { image: "image-2" } });
    await sleep(1500);
    const live = bed.cloud.inspect.instances({ group, states: ["running"] }).map((i) => i.id);
    expect(old.every((id) => live.includes(id))).toBe(true);
    expect(condition(await getPool(bed, name), "Ready")?.reason).toBe("WorkloadClusterUnreachable");

    // The Secret appears: the kit connects (its Nodes are on this API server) and the rollout ends.
    await markWorkloadClusterReady(
      bed.client,
      { namespace: ns, name: cluster },
      bed.client.kubeConfig,
    );
    await eventually(async () => {
      const now = bed.cloud.inspect.instances({ group, states: ["running"] });
      expect(now.some((i) => old.includes(i.id))).toBe(false);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
  });

  it("refuses a kubeconfig Secret with an exec plugin on Ready (never running it), backs off, and recovers once the Secret is fixed", async () => {
    const cluster = "c-exec";
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-exec-"));
    const marker = join(dir, "exec-ran");
    try {
      await bed.client.create(Clusters, {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name: cluster, namespace: ns },
        spec: {
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "DevCluster",
            name: cluster,
          },
        },
      });
      await markWorkloadClusterReady(
        bed.client,
        { namespace: ns, name: cluster },
        bed.client.kubeConfig,
        { kubeconfigSecret: false },
      );
      const server = bed.client.kubeConfig.getCurrentCluster();
      await bed.client.create(SecretResource, {
        apiVersion: "v1",
        kind: "Secret",
        type: "cluster.x-k8s.io/secret",
        metadata: {
          name: `${cluster}-kubeconfig`,
          namespace: ns,
          labels: { "cluster.x-k8s.io/cluster-name": cluster },
        },
        data: {
          value: Buffer.from(
            dump({
              apiVersion: "v1",
              kind: "Config",
              clusters: [
                {
                  name: cluster,
                  cluster: {
                    server: server?.server,
                    "certificate-authority-data": server?.caData,
                  },
                },
              ],
              users: [
                {
                  name: "admin",
                  user: {
                    exec: {
                      apiVersion: "client.authentication.k8s.io/v1",
                      command: "/bin/sh",
                      args: ["-c", `touch ${marker}`],
                    },
                  },
                },
              ],
              contexts: [{ name: cluster, context: { cluster, user: "admin" } }],
              "current-context": cluster,
            }),
          ).toString("base64"),
        },
      });
      const name = await createPool(bed, { replicas: 1, clusterName: cluster });
      await eventually(async () => {
        const ready = condition(await getPool(bed, name), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "WorkloadClusterUnreachable" });
        expect(ready?.message).toContain("KubeconfigSecretInvalid");
        expect(ready?.message).toContain(
          `kubeconfig Secret ${ns}/${cluster}-kubeconfig: user 'admin' uses an exec credential plugin, which capi-ts never runs`,
        );
      });
      expect(existsSync(marker)).toBe(false);
      const events = await bed.client.list(EventResource, { namespace: ns });
      for (const event of events.items) expect(event.message ?? "").not.toContain(marker);
      expect(condition(await getPool(bed, name), "Ready")?.message).not.toContain(marker);

      // Fixed: a kubeconfig of embedded data, and the pool's Nodes are read again.
      await markWorkloadClusterReady(
        bed.client,
        { namespace: ns, name: cluster },
        bed.client.kubeConfig,
      );
      await eventually(async () => {
        expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
      }, 30_000);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
