// The Gadget kind every peer of `./dev bench peers` reconciles: spec.size → status.observedSize.
// Kept free of imports so each peer bundle carries only what its own library loads.

/** A Gadget as the peers see it. */
export interface Gadget {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
  spec: { size: number };
  status?: { observedSize?: number };
}

export const GADGET_GROUP = "bench.capi-ts.dev";
export const GADGET_VERSION = "v1";
export const GADGET_PLURAL = "gadgets";

export const gadgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `${GADGET_PLURAL}.${GADGET_GROUP}` },
  spec: {
    group: GADGET_GROUP,
    scope: "Namespaced",
    names: { plural: GADGET_PLURAL, singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
    versions: [
      {
        name: GADGET_VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", properties: { observedSize: { type: "integer" } } },
            },
          },
        },
      },
    ],
  },
};

/** The command line every peer takes: `--kubeconfig FILE --workers N --expect N`. */
export function peerArgs(argv: readonly string[]): {
  kubeconfig: string;
  workers: number;
  expect: number;
} {
  const value = (name: string): string | undefined => {
    const index = argv.indexOf(`--${name}`);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const kubeconfig = value("kubeconfig");
  if (!kubeconfig) throw new Error("peer: pass --kubeconfig FILE");
  return {
    kubeconfig,
    workers: Number(value("workers") ?? "8"),
    expect: Number(value("expect") ?? "0"),
  };
}

/**
 * The peer protocol on stdout, one line each: `boot-heap BYTES` once the modules are loaded, before
 * anything starts; `idle RECONCILES` when the reconcile count first reaches `--expect`; then
 * `heap BYTES` and `external BYTES` (V8's memory outside its heap: buffers, external strings) after
 * a full GC a second later (and a heap snapshot into `BENCH_HEAP_SNAPSHOT_DIR`, when set).
 */
export function reportBootHeap(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  process.stdout.write(`boot-heap ${process.memoryUsage().heapUsed}\n`);
}

/** Counts reconciles and reports `idle` and `heap` once `expect` of them happened. */
export function reconcileCounter(expect: number): () => void {
  let count = 0;
  return () => {
    count++;
    if (count !== expect) return;
    process.stdout.write(`idle ${count}\n`);
    setTimeout(async () => {
      (globalThis as { gc?: () => void }).gc?.();
      const { heapUsed, external } = process.memoryUsage();
      process.stdout.write(`heap ${heapUsed}\nexternal ${external}\n`);
      // --heap-snapshot DIR of the harness: what that heap holds, for a heap profiler.
      const snapshotDir = process.env.BENCH_HEAP_SNAPSHOT_DIR;
      if (snapshotDir) {
        const { writeHeapSnapshot } = await import("node:v8");
        writeHeapSnapshot(
          `${snapshotDir}/${process.argv[1]?.split("/").pop()}-${expect}-${process.pid}.heapsnapshot`,
        );
      }
    }, 1000);
  };
}
