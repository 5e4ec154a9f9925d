/** Makes a Ready Node join for each launched instance and removes it when the instance is gone. */
import { kubeletConditions } from "@capi-ts/testing";
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
          // Ready and the pressure conditions, as a kubelet posts them: core counts a Node healthy
          // (a MachinePool Machine's NodeHealthy) only once all four are reported.
          body: { status: { conditions: kubeletConditions(true) } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    },
    async onTerminate(_group, instance) {
      await core.deleteNode({ name: instance.id }).catch(() => undefined);
    },
  };
}
