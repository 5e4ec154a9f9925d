/**
 * What a provider ships for clusterctl: `infrastructure-components.yaml` ({@link renderComponents},
 * {@link componentsYAML}: CRDs, least-privilege RBAC derived from what the kit does, the manager
 * Deployment, webhook Service, cert-manager Issuer/Certificate and webhook configurations, all labelled
 * `cluster.x-k8s.io/provider`) and `metadata.yaml` ({@link metadataYAML}).
 *
 * @example
 * ```ts
 * import { componentsYAML, metadataYAML, renderComponents } from "@capi-ts/sdk/manifests";
 *
 * const objects = renderComponents({ name: "foo", kinds: [FooMachinePool], image: "ghcr.io/acme/foo:v0.1.0" });
 * await writeFile("out/infrastructure-components.yaml", componentsYAML(objects));
 * await writeFile("out/metadata.yaml", metadataYAML([{ major: 0, minor: 1, contract: "v1beta2" }]));
 * ```
 *
 * @packageDocumentation
 */
export {
  type ClusterClassFlavor,
  type ClusterClassFlavorOptions,
  type ClusterClassTemplates,
  clusterClassFlavor,
} from "./clusterclass.js";
export {
  componentsYAML,
  metadataYAML,
  type ReleaseSeries,
  renderComponents,
} from "./components.js";
export type {
  AutoscalerRoleOptions,
  ComponentKind,
  ComponentsEnvVar,
  ComponentsOptions,
  ComponentsSecret,
  ComponentsVolume,
} from "./components-options.js";
export {
  autoscalerPermissions,
  type KitPermissionOptions,
  kitPermissions,
  leaderElectionRules,
  mergeRules,
  type PolicyRule,
} from "./permissions.js";
export {
  type ClusterctlVariable,
  clusterctlVariables,
  substituteClusterctlVariables,
} from "./variables.js";
