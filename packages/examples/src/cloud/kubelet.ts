/**
 * A fake kubelet and cloud-controller-manager for the fake cloud: {@link KubeletHooks} that register a
 * Node in a (workload) cluster when an instance joins, mark it not ready when the instance goes away
 * and delete it once the instance is terminated — the Node side of what core CAPI matches against
 * `providerIDList`.
 *
 * @module
 */

import { kubeletConditions } from "@capi-ts/testing";
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { InstanceBoot, KubeletHooks } from "./cloud.js";

/** Options of {@link nodeRegistrar}. */
export interface NodeRegistrarOptions {
  /** The cluster the instances join (for tests and the demo: the in-memory API server). */
  kubeConfig: KubeConfig;
  /**
   * Whether the kubelet can join with the userData it booted with, at boot time (default: always).
   * Check the bootstrap token here: an expired or rotated token must mean "no".
   */
  canJoin?: (boot: InstanceBoot) => boolean | Promise<boolean>;
  /** Node name for an instance (default: the instance ID). */
  nodeName?: (boot: InstanceBoot) => string;
  /** Extra labels for every Node. */
  labels?: Record<string, string>;
  /**
   * Register with the `node.cluster.x-k8s.io/uninitialized:NoSchedule` taint, as kubeadm bootstrap
   * does; core CAPI removes it once the providerID matches. Default true.
   */
  uninitializedTaint?: boolean;
  /**
   * The kubelet version an instance reports on its Node (`status.nodeInfo.kubeletVersion`, which core's
   * topology controller compares with the MachinePool's version). Default {@link fakeKubeletVersion}:
   * the version an image named `fake-k8s-<version>` carries, else none.
   */
  kubeletVersion?: (boot: InstanceBoot) => string | undefined;
}

/**
 * The kubelet version of an instance of the fake cloud: the `<version>` of an image named
 * `fake-k8s-<version>` (the image the example driver picks for a Kubernetes version), else undefined.
 *
 * @example
 * ```ts
 * fakeKubeletVersion({ ...boot, image: "fake-k8s-v1.35.0" }); // "v1.35.0"
 * ```
 */
export function fakeKubeletVersion(boot: Pick<InstanceBoot, "image">): string | undefined {
  const match = /^fake-k8s-(v\d+\.\d+\.\d+[^\s]*)$/.exec(boot.image);
  return match?.[1];
}

/** The Node's `status.nodeInfo` as a kubelet of `version` reports it (the fake cloud's images are Linux). */
function nodeInfo(version: string) {
  return {
    architecture: "amd64",
    bootID: "",
    containerRuntimeVersion: "containerd://2.0.0",
    kernelVersion: "6.8.0",
    kubeProxyVersion: "",
    kubeletVersion: version,
    machineID: "",
    operatingSystem: "linux",
    osImage: "fake-k8s",
    systemUUID: "",
  };
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** A kubeadm bootstrap token, `<6 chars id>.<16 chars secret>`, as found in join configuration. */
const TOKEN_PATTERN = /\b([a-z0-9]{6})\.([a-z0-9]{16})\b/;

function isStatus(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}

/**
 * Kubelet hooks that keep Nodes in step with the fake cloud's instances.
 *
 * @example
 * ```ts
 * const api = await startApiServer();
 * const cloud = new FakeScalingCloud({
 *   clock,
 *   kubelet: nodeRegistrar({ kubeConfig: api.kubeConfig, canJoin: (boot) => tokens.valid(boot.userData) }),
 * });
 * // … instances boot, join, and a Node with spec.providerID = fake:///<zone>/<id> appears
 * await cloud.flush();
 * ```
 */
export function nodeRegistrar(options: NodeRegistrarOptions): KubeletHooks {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const nodeName = options.nodeName ?? ((boot: InstanceBoot) => boot.instanceId);
  const taint = options.uninitializedTaint ?? true;
  const kubeletVersion = options.kubeletVersion ?? fakeKubeletVersion;

  const setReady = async (name: string, ready: boolean, boot?: InstanceBoot): Promise<void> => {
    const conditions = kubeletConditions(ready);
    const version = boot && kubeletVersion(boot);
    const status = version ? { conditions, nodeInfo: nodeInfo(version) } : { conditions };
    await core.patchNodeStatus({ name, body: { status } }, mergePatch);
  };

  return {
    canJoin: options.canJoin,

    async onJoin(boot) {
      const name = nodeName(boot);
      try {
        await core.createNode({
          body: {
            metadata: {
              name,
              labels: {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": boot.zone,
                ...options.labels,
              },
            },
            spec: {
              providerID: boot.providerID,
              taints: taint
                ? [{ key: "node.cluster.x-k8s.io/uninitialized", effect: "NoSchedule" }]
                : undefined,
            },
          },
        });
      } catch (error) {
        if (!isStatus(error, 409)) throw error;
      }
      await setReady(name, true, boot);
    },

    async onLeave(boot) {
      try {
        await setReady(nodeName(boot), false);
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
      }
    },

    async onTerminated(boot) {
      try {
        await core.deleteNode({ name: nodeName(boot) });
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
      }
    },
  };
}

/**
 * A `canJoin` check with kubeadm's semantics: the userData must carry a bootstrap token
 * (`abcdef.0123456789abcdef`) whose Secret `kube-system/bootstrap-token-<id>` exists in the cluster,
 * has the same `token-secret`, allows authentication, and has not expired at the instance's boot time
 * (cloud time). A rotated or expired token therefore means the instance never joins — which is what
 * happens to instances launched from a stale launch template.
 *
 * @example
 * ```ts
 * const kubelet = nodeRegistrar({ kubeConfig: api.kubeConfig, canJoin: bootstrapTokenCheck(api.kubeConfig) });
 * ```
 */
export function bootstrapTokenCheck(
  kubeConfig: KubeConfig,
): (boot: InstanceBoot) => Promise<boolean> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return async (boot) => {
    const match = TOKEN_PATTERN.exec(boot.userData);
    if (!match) return false;
    const [, id, secret] = match;
    let data: Record<string, string>;
    try {
      const found = await core.readNamespacedSecret({
        namespace: "kube-system",
        name: `bootstrap-token-${id}`,
      });
      data = found.data ?? {};
    } catch (error) {
      if (isStatus(error, 404)) return false;
      throw error;
    }
    const field = (key: string): string | undefined => {
      const value = data[key];
      return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
    };
    if (field("token-secret") !== secret) return false;
    if (field("usage-bootstrap-authentication") !== "true") return false;
    const expiration = field("expiration");
    return expiration === undefined || Date.parse(expiration) > boot.at;
  };
}
