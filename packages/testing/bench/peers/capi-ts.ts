// The capi-ts peer of `./dev bench peers`: a Manager with one controller, 8 workers, reading the
// Gadget from the manager's cache and merge-patching status only when it differs.

import { kubeconfigFromFiles, Manager, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  GADGET_GROUP,
  GADGET_PLURAL,
  GADGET_VERSION,
  type Gadget,
  peerArgs,
  reconcileCounter,
  reportBootHeap,
} from "./gadget.js";

const GadgetResource: ResourceDescriptor<Gadget & { metadata: object }> = {
  group: GADGET_GROUP,
  version: GADGET_VERSION,
  kind: "Gadget",
  plural: GADGET_PLURAL,
  scope: "Namespaced",
  subresources: { status: true },
};

reportBootHeap();
const args = peerArgs(process.argv);
// The SDK's own loader, as a provider's main does: client-node stays out of the process.
const kubeConfig = kubeconfigFromFiles([args.kubeconfig]);
const counted = reconcileCounter(args.expect);
const manager = new Manager({
  kubeConfig,
  name: "gadget-capi-ts",
  logger: { level: "silent" },
  maxConcurrentReconciles: args.workers,
  handleSignals: true,
});
manager
  .controller("gadgets")
  .for(GadgetResource)
  .complete(async (request, { cache, client }) => {
    counted();
    const gadget = await cache.get(GadgetResource, request);
    if (!gadget || gadget.status?.observedSize === gadget.spec.size) return;
    await client.mergePatchStatus(GadgetResource, gadget, {
      status: { observedSize: gadget.spec.size },
    });
  });
await manager.start();
