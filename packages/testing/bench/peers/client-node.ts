// The plain @kubernetes/client-node peer of `./dev bench peers`: makeInformer over the Gadgets, a
// de-duplicating work queue drained by 8 workers, and a status merge patch through
// CustomObjectsApi when the cached object's status differs.
import {
  CustomObjectsApi,
  KubeConfig,
  type KubernetesObject,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import {
  GADGET_GROUP,
  GADGET_PLURAL,
  GADGET_VERSION,
  type Gadget,
  peerArgs,
  reconcileCounter,
  reportBootHeap,
} from "./gadget.js";

reportBootHeap();
const args = peerArgs(process.argv);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(args.kubeconfig);
const api = kubeConfig.makeApiClient(CustomObjectsApi);
const counted = reconcileCounter(args.expect);
const path = `/apis/${GADGET_GROUP}/${GADGET_VERSION}/${GADGET_PLURAL}`;
const informer = makeInformer<KubernetesObject & Gadget>(kubeConfig, path, () =>
  api.listClusterCustomObject({
    group: GADGET_GROUP,
    version: GADGET_VERSION,
    plural: GADGET_PLURAL,
  }),
);

// A de-duplicating queue: a key waiting is not added twice; a key being worked on is re-queued once
// its reconcile ends, so one key is never reconciled by two workers at once.
const pending: string[] = [];
const queued = new Set<string>();
const active = new Set<string>();
const dirty = new Set<string>();
const idleWorkers: Array<() => void> = [];

function enqueue(obj: KubernetesObject): void {
  const key = `${obj.metadata?.namespace}/${obj.metadata?.name}`;
  if (active.has(key)) {
    dirty.add(key);
    return;
  }
  if (queued.has(key)) return;
  queued.add(key);
  pending.push(key);
  idleWorkers.pop()?.();
}

async function reconcile(key: string): Promise<void> {
  const [namespace = "", name = ""] = key.split("/");
  const gadget = informer.get(name, namespace);
  if (!gadget || gadget.status?.observedSize === gadget.spec.size) return;
  await api.patchNamespacedCustomObjectStatus(
    {
      group: GADGET_GROUP,
      version: GADGET_VERSION,
      plural: GADGET_PLURAL,
      namespace,
      name,
      body: { status: { observedSize: gadget.spec.size } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

async function worker(): Promise<void> {
  for (;;) {
    const key = pending.shift();
    if (key === undefined) {
      await new Promise<void>((resolve) => {
        idleWorkers.push(resolve);
      });
      continue;
    }
    queued.delete(key);
    active.add(key);
    counted();
    try {
      await reconcile(key);
    } catch (error) {
      process.stderr.write(`reconcile ${key}: ${(error as Error).message}\n`);
    }
    active.delete(key);
    if (dirty.delete(key)) {
      queued.add(key);
      pending.push(key);
      idleWorkers.pop()?.();
    }
  }
}

informer.on("add", enqueue);
informer.on("update", enqueue);
informer.on("error", (error) => {
  process.stderr.write(`informer: ${String(error)}; restarting\n`);
  setTimeout(() => void informer.start(), 1000);
});
for (let i = 0; i < args.workers; i++) void worker();
await informer.start();
process.on("SIGTERM", () => process.exit(0));
