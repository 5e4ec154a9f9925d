/**
 * The ClusterClass flavor of a provider's release: a ClusterClass whose worker MachinePool class
 * stamps out the provider's InfraMachinePool from its `<Kind>Template` (R18), with the templates it
 * names, and a Cluster of that class (`spec.topology`) in clusterctl variables. CAPI providers ship
 * them as `clusterclass-<class>.yaml` and `cluster-template-clusterclass.yaml`
 * (`clusterctl generate cluster --flavor clusterclass` adds the first when the second names its class).
 *
 * @module
 */
import type { Manifest } from "../crd/manifest.js";

/** The templates a ClusterClass names besides the pool's, each a whole object to ship with it. */
export interface ClusterClassTemplates {
  /** The infrastructure cluster template (`spec.infrastructure.templateRef`), e.g. a `FooClusterTemplate`. */
  readonly infrastructureCluster: Manifest;
  /** The control-plane template (`spec.controlPlane.templateRef`), e.g. a `KubeadmControlPlaneTemplate`. */
  readonly controlPlane: Manifest;
  /**
   * The worker pool's bootstrap template (`…machinePools[].bootstrap.templateRef`). Default: a
   * `KubeadmConfigTemplate` whose kubelet runs with `cloud-provider: external`.
   */
  readonly bootstrap?: Manifest;
}

/** Options of {@link clusterClassFlavor}. */
export interface ClusterClassFlavorOptions {
  /** The InfraMachinePool kind (`defineInfraMachinePool`'s result fits). */
  readonly kind: {
    readonly group: string;
    readonly storageVersion: string;
    readonly templateKind: string;
  };
  /** The ClusterClass's name, e.g. `foo-default` (the file is then `clusterclass-foo-default.yaml`). */
  readonly className: string;
  /** The pool's spec in the `<Kind>Template` (`spec.template.spec`), clusterctl variables allowed. */
  readonly poolSpec: Record<string, unknown>;
  /** The other templates the class names. */
  readonly templates: ClusterClassTemplates;
  /** The worker MachinePool class. Default `default-worker`. */
  readonly poolClass?: string;
  /** Namespace of every object. Default `${NAMESPACE}`. */
  readonly namespace?: string;
}

/** What {@link clusterClassFlavor} renders. */
export interface ClusterClassFlavor {
  /** The ClusterClass and the templates it names (`clusterclass-<class>.yaml`), ClusterClass first. */
  readonly clusterClass: Manifest[];
  /**
   * A Cluster of the class (`cluster-template-clusterclass.yaml`): variables `CLUSTER_NAME`,
   * `NAMESPACE`, `KUBERNETES_VERSION`, `WORKER_MACHINE_COUNT` (default 3).
   */
  readonly cluster: Manifest;
}

/** A clusterctl variable, `${NAME}` or `${NAME:=default}`. */
const variable = (name: string, fallback?: string) =>
  `\${${name}${fallback === undefined ? "" : `:=${fallback}`}}`;

const refOf = (template: Manifest) => ({
  apiVersion: template.apiVersion,
  kind: template.kind,
  name: template.metadata?.name ?? "",
});

function named(template: Manifest, name: string, namespace: string): Manifest {
  return { ...template, metadata: { ...template.metadata, name, namespace } } as Manifest;
}

/**
 * Renders the ClusterClass flavor of a kind: the ClusterClass `className` (its worker MachinePool
 * class `poolClass` referencing a `<Kind>Template` of `poolSpec` and the bootstrap template), the
 * templates it names (each renamed `<className>-<role>`), and a Cluster of the class.
 *
 * @example
 * ```ts
 * const { clusterClass, cluster } = clusterClassFlavor({
 *   kind: FooMachinePool,
 *   className: "foo-default",
 *   poolSpec: { instanceType: "small" },
 *   templates: { infrastructureCluster: fooClusterTemplate, controlPlane: kubeadmControlPlaneTemplate },
 * });
 * await writeFile("templates/clusterclass-foo-default.yaml", componentsYAML(clusterClass));
 * await writeFile("templates/cluster-template-clusterclass.yaml", componentsYAML([cluster]));
 * ```
 */
export function clusterClassFlavor(options: ClusterClassFlavorOptions): ClusterClassFlavor {
  const namespace = options.namespace ?? variable("NAMESPACE");
  const poolClass = options.poolClass ?? "default-worker";
  const name = options.className;
  const { kind } = options;
  const pool: Manifest = {
    apiVersion: `${kind.group}/${kind.storageVersion}`,
    kind: kind.templateKind,
    metadata: { name: `${name}-${poolClass}`, namespace },
    spec: { template: { spec: { ...options.poolSpec } } },
  };
  const bootstrap = named(
    options.templates.bootstrap ?? {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfigTemplate",
      metadata: { name: "" },
      spec: {
        template: {
          spec: {
            joinConfiguration: {
              nodeRegistration: {
                kubeletExtraArgs: [{ name: "cloud-provider", value: "external" }],
              },
            },
          },
        },
      },
    },
    `${name}-${poolClass}-bootstrap`,
    namespace,
  );
  const infrastructure = named(
    options.templates.infrastructureCluster,
    `${name}-cluster`,
    namespace,
  );
  const controlPlane = named(options.templates.controlPlane, `${name}-control-plane`, namespace);
  const clusterClass: Manifest = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "ClusterClass",
    metadata: { name, namespace },
    spec: {
      infrastructure: { templateRef: refOf(infrastructure) },
      controlPlane: { templateRef: refOf(controlPlane) },
      workers: {
        machinePools: [
          {
            class: poolClass,
            bootstrap: { templateRef: refOf(bootstrap) },
            infrastructure: { templateRef: refOf(pool) },
          },
        ],
      },
    },
  };
  const cluster: Manifest = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { name: variable("CLUSTER_NAME"), namespace },
    spec: {
      clusterNetwork: { pods: { cidrBlocks: ["192.168.0.0/16"] } },
      topology: {
        classRef: { name },
        version: variable("KUBERNETES_VERSION"),
        workers: {
          machinePools: [
            { class: poolClass, name: "pool-0", replicas: variable("WORKER_MACHINE_COUNT", "3") },
          ],
        },
      },
    },
  };
  return { clusterClass: [clusterClass, infrastructure, controlPlane, bootstrap, pool], cluster };
}
