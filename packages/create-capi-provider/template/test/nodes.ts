/** Makes a Ready Node join for each launched instance and removes it when the instance is gone. */
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { providerIdOf } from "../src/driver.js";
import type { MemoryCloudHooks } from "./memory-cloud.js";

export function joiningNodes(kubeConfig: KubeConfig): MemoryCloudHooks {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    async onLaunch(_group, instance) {
      const name = instance.id;
      await core.createNode({
        body: {
          metadata: { name },
          spec: { providerID: providerIdOf(instance.zone, instance.id) },
        },
      });
      await core.patchNodeStatus(
        {
          name,
          body: {
            status: {
              conditions: [
                {
                  type: "Ready",
                  status: "True",
                  reason: "KubeletReady",
                  message: "kubelet is posting ready status",
                  lastHeartbeatTime: new Date(),
                  lastTransitionTime: new Date(),
                },
              ],
            },
          },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    },
    async onTerminate(_group, instance) {
      await core.deleteNode({ name: instance.id }).catch(() => undefined);
    },
  };
}
