/**
 * A kubelet stand-in: registers, un-readies and removes Nodes for providerIDs in a (workload) cluster,
 * as the kubelet and the cloud-controller-manager of a real instance would. A conformance hook or a
 * test calls {@link KubeletStandIn.join} when its fake cloud's instance runs; the Node appears after
 * the join delay, with the providerID byte for byte, Ready, and kubeadm's uninitialized taint (core
 * removes it once it matched the providerID). For a cloud emulator that cannot call it,
 * {@link kubeletFollowing} polls the cloud's instance list instead.
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
  /**
   * The kubelet version every Node reports (`status.nodeInfo.kubeletVersion`), as the machine image
   * it boots would: core's topology controller counts a MachinePool as upgraded only when its Nodes
   * report its version. Default: none reported.
   */
  readonly kubeletVersion?: string;
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
  /** Changes the join delay of joins from now on (e.g. Nodes that join late in one scenario). */
  setJoinDelay(ms: number): void;
  /** Cancels pending joins. */
  stop(): void;
}

/** One instance as {@link KubeletFollowerOptions.list} reports it. */
export interface FollowedInstance {
  /** The providerID its kubelet writes on the Node, byte for byte. */
  readonly providerID: string;
  /** The Node's name (a real cloud's: the instance's private DNS name, or its ID). */
  readonly nodeName: string;
  /**
   * `running`: its Node joins (after the join delay); `stopping`: it stays but stops being Ready;
   * `gone`: its Node is deleted. An instance the list leaves out is gone too.
   */
  readonly state: "pending" | "running" | "stopping" | "gone";
}

/** Options of {@link kubeletFollowing}. */
export interface KubeletFollowerOptions extends KubeletStandInOptions {
  /** The cloud's instances now: e.g. a DescribeAutoScalingGroups against a cloud emulator. */
  readonly list: () => Promise<readonly FollowedInstance[]>;
  /** Pause between two looks at the cloud, wall milliseconds. Default 250. */
  readonly intervalMs?: number;
}

/** A running {@link kubeletFollowing}. */
export interface KubeletFollower {
  /** One look at the cloud now, applied to the Nodes; resolves when it is done. */
  sync(): Promise<void>;
  /** Changes the join delay of Nodes that join from now on. */
  setJoinDelay(ms: number): void;
  /** The last error of `list` or of a Node write, if the last look failed (the follower goes on). */
  readonly lastError: Error | undefined;
  /** Stops looking; resolves once the look in flight ended. */
  stop(): Promise<void>;
}

function checkedDelay(delay: number, what: string): number {
  if (!Number.isFinite(delay) || delay < 0) {
    throw new RangeError(`${what}: joinDelayMs must be a number of milliseconds ≥ 0, got ${delay}`);
  }
  return delay;
}

/**
 * A kubelet stand-in that follows a cloud: it polls `list` and registers a Node for each running
 * instance (after the join delay), un-readies the Node of a stopping one and deletes the Node of one
 * that is gone, as real kubelets and the cloud-controller-manager would. For a provider tested
 * against a cloud emulator (moto, Azurite, a vendor's fake), which cannot call
 * {@link KubeletStandIn.join} itself. A failing `list` is kept in `lastError` and retried on the next
 * look; Nodes stay as they were meanwhile.
 *
 * @example
 * ```ts
 * const kubelet = kubeletFollowing({
 *   kubeConfig: workload.kubeConfig,
 *   joinDelayMs: 200,
 *   list: async () => (await describeInstances()).map((i) => ({
 *     providerID: `aws:///${i.zone}/${i.id}`, nodeName: i.id, state: i.running ? "running" : "gone",
 *   })),
 * });
 * // …
 * await kubelet.stop();
 * ```
 */
export function kubeletFollowing(options: KubeletFollowerOptions): KubeletFollower {
  const intervalMs = options.intervalMs ?? 250;
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new RangeError(
      `kubeletFollowing: intervalMs must be > 0 milliseconds, got ${intervalMs}`,
    );
  }
  const kubelet = kubeletStandIn(options);
  // Nodes this follower registered (or is registering), by name: only those does it un-ready or delete.
  const known = new Map<string, "joining" | "ready" | "left">();
  let lastError: Error | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const look = async (): Promise<void> => {
    let instances: readonly FollowedInstance[];
    try {
      instances = await options.list();
    } catch (error) {
      lastError = error instanceof Error ? error : new Error(String(error));
      return;
    }
    const seen = new Set<string>();
    const writes: Promise<void>[] = [];
    for (const instance of instances) {
      if (instance.state === "gone") continue;
      seen.add(instance.nodeName);
      const now = known.get(instance.nodeName);
      if (instance.state === "running" && now === undefined) {
        known.set(instance.nodeName, "joining");
        writes.push(
          kubelet.join(instance.providerID, instance.nodeName).then(() => {
            if (known.get(instance.nodeName) === "joining") known.set(instance.nodeName, "ready");
          }),
        );
      } else if (instance.state === "stopping" && now === "ready") {
        known.set(instance.nodeName, "left");
        writes.push(kubelet.leave(instance.nodeName));
      }
    }
    for (const nodeName of [...known.keys()]) {
      if (seen.has(nodeName)) continue;
      known.delete(nodeName);
      writes.push(kubelet.remove(nodeName));
    }
    const results = await Promise.allSettled(writes);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    lastError = failed
      ? failed.reason instanceof Error
        ? failed.reason
        : new Error(String(failed.reason))
      : undefined;
  };

  const sync = (): Promise<void> => {
    // One look at a time: a slow list must not overlap the next one.
    inFlight = inFlight.then(look);
    return inFlight;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void sync().finally(schedule);
    }, intervalMs);
  };
  schedule();

  return {
    sync,
    setJoinDelay(ms) {
      kubelet.setJoinDelay(checkedDelay(ms, "kubeletFollowing.setJoinDelay"));
    },
    get lastError() {
      return lastError;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      kubelet.stop();
      await inFlight;
    },
  };
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
  let delay = checkedDelay(options.joinDelayMs ?? 0, "kubeletStandIn");
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
        status: {
          conditions: kubeletConditions(true),
          ...(options.kubeletVersion
            ? { nodeInfo: { kubeletVersion: options.kubeletVersion } }
            : {}),
        },
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
    setJoinDelay(ms) {
      delay = checkedDelay(ms, "kubeletStandIn.setJoinDelay");
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
