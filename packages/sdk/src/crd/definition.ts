/**
 * What `defineInfraMachinePool` takes and returns: the provider's input, the contract's fields,
 * the pool object's type and the definition with its CRDs, schema and manifests.
 *
 * @module
 */
import type * as z from "zod";
import type { OwnerReference } from "../contract/owners.js";
import type { KubeObject, ResourceRef } from "../patch/transport.js";
import type { KindConversion, SpokeVersion } from "./conversion.js";
import type { InfraMachineDefinition } from "./machine.js";
import type { Manifest } from "./manifest.js";

/** An extra `kubectl get` column. */
export interface PrinterColumn {
  /** Column header. */
  name: string;
  /** `string`, `integer`, `number`, `boolean` or `date`. */
  type: "string" | "integer" | "number" | "boolean" | "date";
  /** JSONPath into the object, e.g. `.spec.instanceType`. */
  jsonPath: string;
  /**
   * Human-readable help for the column, carried in the CRD and in table output; `kubectl get` does
   * not print it.
   */
  description?: string;
  /** 0 = always shown, higher = only with `-o wide`. */
  priority?: number;
}

/** What `defineInfraMachinePool` (of `@capi-ts/sdk/crd`) needs. */
export interface InfraMachinePoolInput<
  Spec extends z.ZodObject = z.ZodObject,
  Status extends z.ZodObject = z.ZodObject,
> {
  /** API group, e.g. `infrastructure.example.com` (core's manager has RBAC on `infrastructure.cluster.x-k8s.io` only, R3). */
  group: string;
  /** Kind, by convention `<Env>MachinePool`. */
  kind: string;
  /**
   * Served versions; they make the contract label value (R4). Without `spokes` all have the schema of
   * `spec` and `status`; with `spokes`, the storage version has it and each other version its own.
   */
  versions: readonly string[];
  /**
   * Storage version (default: the last of `versions`). With `spokes` it is the hub every other version
   * converts through.
   */
  storageVersion?: string;
  /** The provider's own spec fields (of the storage version); the contract fields are added (do not declare them). */
  spec: Spec;
  /** The provider's own status fields (of the storage version); the contract fields are added (do not declare them). */
  status?: Status;
  /**
   * Versions with a schema of their own: every served version but the storage one (the hub), with its
   * schemas and its conversions to and from the hub. The CRDs then carry one schema per version and
   * `conversion.strategy: Webhook` (the manager serves it, `conversionWebhook`); what a version cannot
   * hold is kept in the `cluster.x-k8s.io/conversion-data` annotation, so a round trip loses nothing.
   * Check each with `expectLosslessConversion` of `@capi-ts/sdk/provider/testing`.
   */
  spokes?: Readonly<
    Record<string, SpokeVersion<InfraMachinePoolContent<z.output<Spec>, z.output<Status>>>>
  >;
  /**
   * MachinePool Machines (R11): `true` (or `{ kind }`) defines the InfraMachine kind of the pool
   * (default `<Kind>Machine`, in the same group and versions; see {@link InfraMachineDefinition}),
   * adds `status.infrastructureMachineKind`, and makes the kit keep one InfraMachine per instance,
   * so core creates a Machine for each and drains its Node before the kit deletes the instance.
   */
  machinePoolMachines?: boolean | { readonly kind?: string };
  /** Adds `status.instances` (R13). Default true. */
  instances?: boolean;
  /** Extra printer columns (after Cluster, Replicas, Provisioned; Age stays last). */
  printerColumns?: readonly PrinterColumn[];
  /** Short names for `kubectl`. */
  shortNames?: readonly string[];
  /** Extra categories besides `cluster-api`. */
  categories?: readonly string[];
  /** Description of the kind. */
  description?: string;
  /** Name of the aggregated ClusterRole (default `<plural>.<group>-capi-manager`). */
  clusterRoleName?: string;
}

/** The contract fields of an InfraMachinePool spec. */
export interface InfraMachinePoolContractSpec {
  /** Provider IDs of the instances (R8). */
  providerIDList?: string[];
  /** Pool-level ID (R12). */
  providerID?: string;
}

/** The contract fields of an InfraMachinePool status. */
export interface InfraMachinePoolContractStatus {
  /** Provisioned, as core reads it at HEAD (kept equal to `initialization.provisioned`, R10). */
  ready?: boolean;
  /** Initialization progress (R10). */
  initialization?: { provisioned?: boolean };
  /** Observed number of instances (R9). */
  replicas?: number;
  /** v1beta2 conditions (R15). */
  conditions?: Array<{
    type: string;
    status: "True" | "False" | "Unknown";
    observedGeneration?: number;
    lastTransitionTime: string;
    reason: string;
    message: string;
  }>;
  /**
   * What one instance offers, resource name → Kubernetes quantity (scale from zero: the
   * cluster-autoscaler reads it for an empty pool); written by the kit from `PoolDriver.capacity`.
   */
  capacity?: Record<string, string>;
  /**
   * Architecture (Go's `GOARCH`: `amd64`, `arm64`, …) and operating system (`linux`, `windows`) of
   * the pool's Nodes (scale from zero), with `capacity`. Plain strings here, so the CRD layer's
   * declarations do not carry the contract's capacity module; `NODE_ARCHITECTURES` lists the values.
   */
  nodeInfo?: { architecture?: string; operatingSystem?: string };
  /** Generation last reconciled. */
  observedGeneration?: number;
  /** MachinePool Machines opt-in (R11). */
  infrastructureMachineKind?: string;
  /** Per-instance status (R13). */
  instances?: Array<{
    addresses?: Array<{
      address: string;
      type: "Hostname" | "ExternalIP" | "InternalIP" | "ExternalDNS" | "InternalDNS";
    }>;
    instanceName?: string;
    providerID?: string;
    ready?: boolean;
    version?: string;
  }>;
}

/**
 * What a conversion of an InfraMachinePool rewrites, typed at the hub: its spec and status, contract
 * fields included (a template's `spec.template.spec` comes as `spec`, with no status).
 */
export interface InfraMachinePoolContent<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> {
  /** Provider spec plus contract fields. */
  spec: Spec & InfraMachinePoolContractSpec;
  /** Provider status plus contract fields. */
  status?: Status & InfraMachinePoolContractStatus;
}

/** An InfraMachinePool object of a provider kind. */
export interface InfraMachinePoolObject<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> {
  /** `group/version`. */
  apiVersion: string;
  /** The provider kind, e.g. `FooMachinePool`. */
  kind: string;
  /** The metadata fields the kit reads and writes; the API server fills the rest. */
  metadata: NonNullable<KubeObject["metadata"]> & { ownerReferences?: OwnerReference[] };
  /** Provider spec plus contract fields. */
  spec: Spec & InfraMachinePoolContractSpec;
  /** Provider status plus contract fields. */
  status?: Status & InfraMachinePoolContractStatus;
}

/** What a defined kind's resource says besides its address: kind, scope and subresources. */
export interface DefinedResource {
  /** `kind` of the objects. */
  readonly kind: string;
  /** InfraMachinePools and their templates are namespaced (R1). */
  readonly scope: "Namespaced";
  /** Whether `/status` is served: true for the pool kind, false for its template. */
  readonly subresources: { readonly status: boolean };
}

/** The result of `defineInfraMachinePool` (of `@capi-ts/sdk/crd`). */
export interface InfraMachinePoolDefinition<Spec extends z.ZodObject, Status extends z.ZodObject> {
  /** The API group of the kind, e.g. `infrastructure.foo.com` (never `cluster.x-k8s.io`). */
  readonly group: string;
  /** The kind, e.g. `FooMachinePool`; `<Kind>Template` and `<Kind>List` derive from it. */
  readonly kind: string;
  /** `<Kind>List`. */
  readonly listKind: string;
  /** Plural resource name (flect-pluralised lower-case kind). */
  readonly plural: string;
  /** CRD name, `calculateCRDName(group, kind)` (R5). */
  readonly crdName: string;
  /** Every version the CRD serves, e.g. `["v1beta1", "v1beta2"]`. */
  readonly versions: readonly string[];
  /** The version objects are stored in (default: the last served one); `resource` points at it. */
  readonly storageVersion: string;
  /** `apiVersion` of objects at the storage version. */
  readonly apiVersion: string;
  /**
   * Where objects are served (storage version), for the patch helper and clients. It carries kind,
   * scope and the status subresource too, so it is a runtime `ResourceDescriptor` as is
   * (`client.get(definition.resource, ns, name)`).
   */
  readonly resource: ResourceRef & DefinedResource;
  /** `<Kind>Template`. */
  readonly templateKind: string;
  /** Where templates are served (a runtime `ResourceDescriptor` as is; templates have no status). */
  readonly templateResource: ResourceRef & DefinedResource;
  /** The conventional finalizer `<kind-lowercase>.<group>` (R23). */
  readonly finalizer: string;
  /**
   * How objects convert between versions (given `spokes`), or `undefined` when every version has the
   * same schema. The conversion webhook and the round-trip checks use it.
   */
  readonly conversion: KindConversion | undefined;
  /** The InfraMachinePool CRD, with the contract label core uses to pick the served version. */
  readonly crd: Manifest;
  /** The `<Kind>Template` CRD (R18). */
  readonly templateCrd: Manifest;
  /** The ClusterRole aggregated into core's manager role (R3). */
  readonly clusterRole: Manifest;
  /** zod schema of a whole object (provider fields + contract fields). */
  readonly schema: z.ZodType<InfraMachinePoolObject<z.output<Spec>, z.output<Status>>>;
  /**
   * The InfraMachine kind of MachinePool Machines (`machinePoolMachines`), or `undefined` when the
   * pool does not offer them.
   */
  readonly machine: InfraMachineDefinition | undefined;
  /** CRD, template CRD, the InfraMachine CRD (with `machinePoolMachines`) and ClusterRole. */
  manifests(): Manifest[];
  /** The manifests as a multi-document YAML string. */
  toYAML(): string;
}
