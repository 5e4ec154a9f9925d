// A leaf of crd/: the manifest shape that both the pool kind (define.ts) and the InfraMachine kind
// (machine.ts) produce, so that neither has to import the other for it.
/** A Kubernetes object manifest as plain JSON. */
export interface Manifest {
  /** `group/version`. */
  apiVersion: string;
  /** The object's kind, e.g. `CustomResourceDefinition` or `ClusterRole`. */
  kind: string;
  /**
   * Name, namespace (for namespaced kinds), labels and annotations; the rest is set by the API
   * server.
   */
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  /** Any other field. */
  [key: string]: unknown;
}
