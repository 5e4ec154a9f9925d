/**
 * What `renderComponents` takes: the kind, the image, the manager's flags, its environment, Secrets
 * and volumes, the autoscaler's role.
 *
 * @module
 */
import type { InfraMachinePoolDefinition } from "../crd/definition.js";
import type { Manifest } from "../crd/manifest.js";
import {
  autoscalerPermissions,
  type KitPermissionOptions,
  type PolicyRule,
} from "./permissions.js";

/** What {@link renderComponents} needs of a defined kind. */
export type ComponentKind = Pick<
  InfraMachinePoolDefinition<never, never>,
  | "group"
  | "kind"
  | "templateKind"
  | "plural"
  | "storageVersion"
  | "crd"
  | "templateCrd"
  | "clusterRole"
  | "templateResource"
> &
  Partial<Pick<InfraMachinePoolDefinition<never, never>, "machine" | "conversion">>;

/** Options of {@link ComponentsOptions.autoscalerRole}. */
export interface AutoscalerRoleOptions {
  /** Name of the ClusterRole. Default `<prefix>-cluster-autoscaler`. */
  readonly name?: string;
  /**
   * The cluster-autoscaler's ServiceAccount: a ClusterRoleBinding to it is rendered too. Without it,
   * bind the role to the autoscaler yourself (its Helm chart or manifests name the account).
   */
  readonly serviceAccount?: { readonly namespace: string; readonly name: string };
}

/** Options of {@link renderComponents}. */
export interface ComponentsOptions {
  /**
   * The provider name as clusterctl knows it (`clusterctl init --infrastructure <name>`): lower-case
   * letters, digits and dashes. The label `cluster.x-k8s.io/provider: infrastructure-<name>` goes on
   * every object.
   */
  name: string;
  /** The kinds the provider serves (each with its template). */
  kinds: readonly ComponentKind[];
  /** The manager's container image, e.g. `ghcr.io/acme/foo-provider:v0.1.0`. */
  image: string;
  /** Prefix of object names and of the namespace `<prefix>-system`. Default `<name>-provider`. */
  prefix?: string;
  /** Serve defaulting webhooks (a MutatingWebhookConfiguration). Default false. */
  defaulting?: boolean;
  /** Serve validating webhooks (a ValidatingWebhookConfiguration). Default true. */
  validating?: boolean;
  /** What the kit touches (Nodes, the groups of control plane kinds the preflight checks read). */
  kit?: KitPermissionOptions;
  /** Rules the provider's own code needs on top of the kit's (e.g. reading a credentials Secret). */
  extraRules?: readonly PolicyRule[];
  /**
   * Scale from zero: a ClusterRole that lets the cluster-autoscaler's clusterapi provider read the
   * provider's pools (get, list, watch on every kind's InfraMachinePools, as
   * {@link autoscalerPermissions} says), where it finds `status.capacity` and `status.nodeInfo` of
   * an empty MachinePool. `true` names it `<prefix>-cluster-autoscaler`; {@link AutoscalerRoleOptions} names
   * it and binds it to the autoscaler's ServiceAccount. Default: none (an autoscaler without the role
   * cannot build the Node of an empty pool, and does not scale it from zero).
   */
  autoscalerRole?: boolean | AutoscalerRoleOptions;
  /**
   * clusterctl variable prefix (upper-case) for the knobs users set at `clusterctl init`:
   * `${<P>_LOG_LEVEL:=info}` (a variable with an empty default is one clusterctl refuses as unset, so
   * a watch filter or namespace goes into `args`, e.g. `--watch-filter=${<P>_WATCH_FILTER:=none}`).
   * Default: the name upper-cased.
   */
  variablePrefix?: string;
  /** Extra manager arguments. */
  args?: readonly string[];
  /** Extra environment variables of the manager: a value (may use clusterctl variables) or a `valueFrom`. */
  env?: readonly ComponentsEnvVar[];
  /**
   * Secrets the release ships in the provider's namespace (`<prefix>-<name>`), typically cloud
   * credentials filled from a clusterctl variable at `clusterctl init`, e.g.
   * `{ name: "credentials", data: { credentials: "${FOO_B64ENCODED_CREDENTIALS}" }, mountPath: "/home/.foo" }`.
   * Each is mounted read-only at `mountPath` and/or exposed through `env`.
   */
  secrets?: readonly ComponentsSecret[];
  /** More volumes of the manager's pod, each mounted into the manager container. */
  volumes?: readonly ComponentsVolume[];
  /**
   * Further objects to ship (a ConfigMap, an identity object's CRD, …), appended as given with the
   * provider label added. A namespaced object without a namespace goes into `<prefix>-system`.
   */
  extraObjects?: readonly Manifest[];
}

/** An environment variable of the manager (see {@link ComponentsOptions.env}). */
export type ComponentsEnvVar =
  | { readonly name: string; readonly value: string }
  | {
      readonly name: string;
      readonly valueFrom:
        | {
            readonly secretKeyRef: {
              readonly name: string;
              readonly key: string;
              readonly optional?: boolean;
            };
          }
        | {
            readonly configMapKeyRef: {
              readonly name: string;
              readonly key: string;
              readonly optional?: boolean;
            };
          }
        | { readonly fieldRef: { readonly fieldPath: string } };
    };

/** A Secret the release ships (see {@link ComponentsOptions.secrets}). */
export interface ComponentsSecret {
  /** Suffix of its name: the Secret is `<prefix>-<name>`. A DNS label, e.g. `credentials`. */
  readonly name: string;
  /** Its `data`: base64 values, normally a clusterctl variable (`${FOO_B64ENCODED_CREDENTIALS}`). */
  readonly data: Readonly<Record<string, string>>;
  /** Mount it read-only into the manager container here (an absolute path). */
  readonly mountPath?: string;
  /** Expose keys as environment variables of the manager (`secretKeyRef`). */
  readonly env?: ReadonlyArray<{ readonly name: string; readonly key: string }>;
}

/** A volume of the manager's pod (see {@link ComponentsOptions.volumes}). */
export interface ComponentsVolume {
  /** The volume's name, a DNS label (`cert` is the webhook certificate's). */
  readonly name: string;
  /** Its source as a pod's volume has it, e.g. `{ emptyDir: {} }` or `{ configMap: { name: "…" } }`. */
  readonly source: Readonly<Record<string, unknown>>;
  /** Where the manager container mounts it (an absolute path). */
  readonly mountPath: string;
  /** Mount it read-only. Default true. */
  readonly readOnly?: boolean;
}

// Kinds renderComponents may be given in extraObjects without a namespace and that have none.
