/**
 * A kubelet stand-in: registers, un-readies and removes Nodes for providerIDs in a (workload) cluster,
 * as the kubelet and the cloud-controller-manager of a real instance would. A conformance hook or a
 * test calls {@link KubeletStandIn.join} when its fake cloud's instance runs; the Node appears after
 * the join delay, with the providerID byte for byte, Ready, and kubeadm's uninitialized taint (core
 * removes it once it matched the providerID).
 *
 * @module
 */
import { isAlreadyExists, isNotFound, KubeClient, NodeResource } from "@capi-ts/sdk/runtime";
import type { KubeConfig, V1NodeCondition } from "@kubernetes/client-node";

/** Options of {@link kubeletStandIn}. */
export interface KubeletStandInOptions {
  /** The cluster the Nodes register in (the workload cluster: its kubeconfig, not the management one). */
  readonly kubeConfig: KubeConfig;
  /** Wall-clock delay from {@link KubeletStandIn.join} to the Node being registered and Ready. Default 0. */
  readonly joinDelayMs?: number;
  /** Register with `node.cluster.x-k8s.io/uninitialized:NoSchedule`, as kubeadm does. Default true. */
  readonly uninitializedTaint?: boolean;
  /** Labels of every Node. */
  readonly labels?: Readonly<Record<string, string>>;
}

/** A running kubelet stand-in. */
export interface KubeletStandIn {
  /**
   * Registers a Ready Node named `nodeName` with `providerID` after the join delay; resolves once it
   * is registered. Joining again is a no-op. A {@link KubeletStandIn.remove} during the delay cancels.
   */
  join(providerID: string, nodeName: string): Promise<void>;
  /** The instance is going away: its Node stops reporting Ready (status Unknown). */
  leave(nodeName: string): Promise<void>;
  /** The instance is gone: the cloud-controller-manager deletes its Node. */
  remove(nodeName: string): Promise<void>;
  /** Cancels pending joins. */
  stop(): void;
}

/**
 * The conditions a kubelet posts: `Ready` and the three pressure conditions (`MemoryPressure`,
 * `DiskPressure`, `PIDPressure`; core's Machine controller counts a Node healthy only once all are
 * reported). A kubelet that stopped posting leaves them `Unknown`, as the node lifecycle controller
 * marks them.
 *
 * @example
 * ```ts
 * await core.patchNodeStatus({ name, body: { status: { conditions: kubeletConditions(true) } } }, mergePatch);
 * ```
 */
export function kubeletConditions(ready: boolean): V1NodeCondition[] {
  const now = new Date();
  const stopped = {
    status: "Unknown",
    reason: "NodeStatusUnknown",
    message: "Kubelet stopped posting node status.",
  };
  const pressure = (type: string, reason: string, message: string): V1NodeCondition => ({
    type,
    ...(ready ? { status: "False", reason, message } : stopped),
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return [
    {
      type: "Ready",
      ...(ready
        ? { status: "True", reason: "KubeletReady", message: "kubelet is posting ready status" }
        : stopped),
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    },
    pressure(
      "MemoryPressure",
      "KubeletHasSufficientMemory",
      "kubelet has sufficient memory available",
    ),
    pressure("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    pressure("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
  ];
}

/**
 * Starts a kubelet stand-in for a cluster.
 *
 * @example
 * ```ts
 * const kubelet = kubeletStandIn({ kubeConfig: workload.kubeConfig, joinDelayMs: 500 });
 * await kubelet.join("fake:///zone-a/i-1", "i-1"); // a Ready Node with that providerID, 500 ms later
 * await kubelet.remove("i-1");
 * kubelet.stop();
 * ```
 */
export function kubeletStandIn(options: KubeletStandInOptions): KubeletStandIn {
  const client = new KubeClient(options.kubeConfig, { fieldManager: "kubelet" });
  const delay = options.joinDelayMs ?? 0;
  if (!Number.isFinite(delay) || delay < 0) {
    throw new RangeError(
      `kubeletStandIn: joinDelayMs must be a number of milliseconds ≥ 0, got ${delay}`,
    );
  }
  const taint = options.uninitializedTaint ?? true;
  const pending = new Map<string, { timer: NodeJS.Timeout; resolve: () => void }>();

  const register = async (providerID: string, nodeName: string): Promise<void> => {
    try {
      await client.create(NodeResource, {
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name: nodeName,
          labels: { "kubernetes.io/hostname": nodeName, ...options.labels },
        },
        spec: {
          providerID,
          ...(taint
            ? { taints: [{ key: "node.cluster.x-k8s.io/uninitialized", effect: "NoSchedule" }] }
            : {}),
        },
      });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
    await client.mergePatchStatus(
      NodeResource,
      { name: nodeName },
      {
        status: { conditions: kubeletConditions(true) },
      },
    );
  };

  return {
    join(providerID, nodeName) {
      if (providerID === "") {
        return Promise.reject(
          new Error(`kubeletStandIn.join: Node ${nodeName} needs a providerID (got an empty one)`),
        );
      }
      if (pending.has(nodeName)) return Promise.resolve();
      if (delay === 0) return register(providerID, nodeName);
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(nodeName);
          register(providerID, nodeName).then(resolve, reject);
        }, delay);
        pending.set(nodeName, { timer, resolve });
      });
    },
    async leave(nodeName) {
      try {
        await client.mergePatchStatus(
          NodeResource,
          { name: nodeName },
          {
            status: { conditions: kubeletConditions(false) },
          },
        );
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    async remove(nodeName) {
      const join = pending.get(nodeName);
      if (join) {
        clearTimeout(join.timer);
        pending.delete(nodeName);
        join.resolve();
      }
      try {
        await client.delete(NodeResource, { name: nodeName });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    },
    stop() {
      for (const { timer, resolve } of pending.values()) {
        clearTimeout(timer);
        resolve();
      }
      pending.clear();
    },
  };
}
