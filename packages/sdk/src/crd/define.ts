import { dump } from "js-yaml";
import * as z from "zod";
import { pluralize } from "../conditions/pluralize.js";
import { CLUSTER_API_GROUP, contractLabel, finalizerFor, Labels } from "../contract/constants.js";
import { calculateCRDName } from "../contract/format.js";
import type { OwnerReference } from "../contract/owners.js";
import type { KubeObject, ResourceRef } from "../patch/transport.js";
import {
  CONTRACT_SPEC_KEYS,
  CONTRACT_STATUS_KEYS,
  contractSpecProperties,
  contractSpecZod,
  contractStatusProperties,
  contractStatusZod,
} from "./contract-fields.js";
import {
  type ConvertibleContent,
  type KindConversion,
  kindConversion,
  type SpokeVersion,
} from "./conversion.js";
import { derivedNameProblems } from "./derived-names.js";
import { type InfraMachineDefinition, infraMachineDefinition } from "./machine.js";
import type { Manifest } from "./manifest.js";
import {
  NonStructuralSchemaError,
  type StructuralSchema,
  zodToStructuralSchema,
} from "./structural.js";

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

/** What {@link defineInfraMachinePool} needs. */
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

/** The result of {@link defineInfraMachinePool}. */
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

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`defineInfraMachinePool: ${message}`);
}

function objectProperties(schema: StructuralSchema, path: string): StructuralSchema {
  if (schema.type !== "object" || schema.additionalProperties !== undefined) {
    throw new NonStructuralSchemaError(path, "must be a z.object({...}) with named fields");
  }
  return schema;
}

function injectFields(
  own: StructuralSchema,
  contract: Record<string, StructuralSchema>,
  reserved: readonly string[],
  path: string,
): StructuralSchema {
  for (const key of Object.keys(own.properties ?? {})) {
    if (reserved.includes(key)) {
      throw new NonStructuralSchemaError(
        `${path}.${key}`,
        key === "failureReason" || key === "failureMessage"
          ? "core's MachinePool controller panics when this is set (contract G4); report failures with a condition"
          : "is a contract field that defineInfraMachinePool adds with its exact validation; remove it from your schema",
      );
    }
  }
  return { ...own, type: "object", properties: { ...(own.properties ?? {}), ...contract } };
}

const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Defines a provider's InfraMachinePool kind from zod schemas of its own fields, and returns everything
 * CAPI needs: the CRD with every contract field injected with its exact validation (R8–R15), named by
 * `calculateCRDName` (R5), labelled `cluster.x-k8s.io/v1beta2: <versions>` (R4), namespaced (R1), with the
 * status subresource (R7), category `cluster-api` and printer columns; the `<Kind>Template` CRD (R18); the
 * ClusterRole aggregated into core's manager (R3); and a zod schema of the whole object. Generate the
 * TypeScript types from the same CRD with {@link generateInfraMachinePoolTypes}.
 *
 * @example
 * ```ts
 * export const FooMachinePool = defineInfraMachinePool({
 *   group: "infrastructure.foo.com",
 *   kind: "FooMachinePool",
 *   versions: ["v1beta2"],
 *   spec: z.object({ instanceType: z.string().min(1), subnets: z.array(z.string()).optional() }),
 *   status: z.object({ asgName: z.string().optional() }),
 * });
 * await writeFile("config/crds.yaml", FooMachinePool.toYAML());
 * ```
 */
export function defineInfraMachinePool<
  Spec extends z.ZodObject,
  Status extends z.ZodObject = z.ZodObject,
>(input: InfraMachinePoolInput<Spec, Status>): InfraMachinePoolDefinition<Spec, Status> {
  const { group, kind } = input;
  check(
    typeof group === "string" && GROUP.test(group),
    `group ${JSON.stringify(group)} must be a DNS subdomain with a dot, e.g. "infrastructure.foo.com"`,
  );
  check(
    group !== CLUSTER_API_GROUP,
    `group must not be ${CLUSTER_API_GROUP} (core's group); use infrastructure.<your domain>`,
  );
  check(
    typeof kind === "string" && KIND.test(kind),
    `kind ${JSON.stringify(kind)} must be CamelCase, e.g. "FooMachinePool"`,
  );
  check(
    !kind.endsWith("Template") && !kind.endsWith("List"),
    `kind ${kind} must not end in Template or List (those kinds are derived)`,
  );
  const versions = [...input.versions];
  check(versions.length > 0, 'versions must list at least one served version, e.g. ["v1beta2"]');
  for (const v of versions)
    check(VERSION.test(v), `version ${JSON.stringify(v)} must look like v1, v1beta2 or v1alpha1`);
  check(
    new Set(versions).size === versions.length,
    `versions ${JSON.stringify(versions)} has duplicates`,
  );
  const storageVersion = input.storageVersion ?? (versions[versions.length - 1] as string);
  check(
    versions.includes(storageVersion),
    `storageVersion ${storageVersion} is not one of the served versions ${versions.join(", ")}`,
  );
  check(
    input.spec instanceof z.ZodObject,
    "spec must be a z.object({...}) of the provider's own spec fields",
  );
  if (input.status !== undefined) {
    check(
      input.status instanceof z.ZodObject,
      "status must be a z.object({...}) of the provider's own status fields",
    );
  }

  const spokes = input.spokes;
  if (spokes !== undefined) {
    for (const version of Object.keys(spokes)) {
      check(
        versions.includes(version),
        `spokes.${version} is not one of the served versions ${versions.join(", ")}`,
      );
      check(
        version !== storageVersion,
        `spokes.${version} is the storage version, the hub: its schema is spec and status, and it converts to nothing`,
      );
      const spoke = spokes[version] as SpokeVersion;
      check(
        spoke.spec instanceof z.ZodObject &&
          (spoke.status === undefined || spoke.status instanceof z.ZodObject),
        `spokes.${version}: spec (and status, if given) must be z.object({...}) of that version's own fields`,
      );
      check(
        typeof spoke.toHub === "function" && typeof spoke.fromHub === "function",
        `spokes.${version} needs toHub and fromHub conversions`,
      );
    }
    for (const version of versions) {
      check(
        version === storageVersion || Object.hasOwn(spokes, version),
        `version ${version} has no entry in spokes: with spokes, every served version but the storage version ${storageVersion} needs its schemas and conversions`,
      );
    }
  }

  const plural = pluralize(kind.toLowerCase());
  const crdName = calculateCRDName(group, kind);
  const templateKind = `${kind}Template`;
  const templatePlural = pluralize(templateKind.toLowerCase());
  const instances = input.instances ?? true;
  const machinePoolMachines = Boolean(input.machinePoolMachines);
  const machine = input.machinePoolMachines
    ? infraMachineDefinition({
        group,
        poolKind: kind,
        versions,
        storageVersion,
        ...(typeof input.machinePoolMachines === "object" && input.machinePoolMachines.kind
          ? { kind: input.machinePoolMachines.kind }
          : {}),
      })
    : undefined;
  const finalizer = finalizerFor(kind, group);
  const derivedProblems = [
    ...derivedNameProblems({ kind, plural, crdName, finalizer }),
    ...derivedNameProblems({
      kind: templateKind,
      plural: templatePlural,
      crdName: calculateCRDName(group, templateKind),
    }),
    ...(machine
      ? derivedNameProblems({
          kind: machine.kind,
          plural: machine.plural,
          crdName: machine.crdName,
          finalizer: machine.finalizer,
        })
      : []),
  ];
  check(derivedProblems.length === 0, derivedProblems.join("; "));

  // The CRD schemas of one version: the provider's fields plus the contract's.
  const structuralSchemas = (spec: z.ZodObject, status: z.ZodObject | undefined, at: string) => {
    const prefix = at ? `${at}.` : "";
    const ownSpec = objectProperties(zodToStructuralSchema(spec, `${prefix}spec`), `${prefix}spec`);
    const ownStatus = status
      ? objectProperties(zodToStructuralSchema(status, `${prefix}status`), `${prefix}status`)
      : ({ type: "object" } as StructuralSchema);
    const specSchema = injectFields(
      ownSpec,
      contractSpecProperties(),
      CONTRACT_SPEC_KEYS,
      `${prefix}spec`,
    );
    const statusSchema = injectFields(
      ownStatus,
      contractStatusProperties({ machinePoolMachines, instances }),
      CONTRACT_STATUS_KEYS,
      `${prefix}status`,
    );
    if (!specSchema.description)
      specSchema.description = `spec defines the desired state of ${kind}.`;
    if (!statusSchema.description)
      statusSchema.description = `status defines the observed state of ${kind}.`;
    return { specSchema, statusSchema };
  };
  const schemasByVersion = new Map(
    versions.map((version) => {
      const spoke = spokes?.[version];
      return [
        version,
        spoke
          ? structuralSchemas(spoke.spec, spoke.status, `spokes.${version}`)
          : structuralSchemas(input.spec, input.status, ""),
      ] as const;
    }),
  );
  const schemasOf = (version: string) =>
    schemasByVersion.get(version) as ReturnType<typeof structuralSchemas>;
  // Conversion goes through a webhook the manager serves; renderComponents points the placeholder
  // Service (kubebuilder's names) at the provider's own and has cert-manager inject its CA.
  const conversionSpec = spokes
    ? {
        conversion: {
          strategy: "Webhook",
          webhook: {
            conversionReviewVersions: ["v1"],
            clientConfig: {
              service: { name: "webhook-service", namespace: "system", path: "/convert" },
            },
          },
        },
      }
    : {};

  const labels = { [contractLabel("v1beta2")]: versions.join("_") };
  const categories = ["cluster-api", ...(input.categories ?? [])];
  const columns = [
    {
      name: "Cluster",
      type: "string",
      jsonPath: `.metadata.labels['${Labels.ClusterName.replace(/\./g, "\\.")}']`,
      description: "Cluster",
    },
    {
      name: "Replicas",
      type: "integer",
      jsonPath: ".status.replicas",
      description: "Observed instances",
    },
    {
      name: "Provisioned",
      type: "boolean",
      jsonPath: ".status.initialization.provisioned",
      description: "The pool is provisioned",
    },
    ...(input.printerColumns ?? []),
    {
      name: "Age",
      type: "date",
      jsonPath: ".metadata.creationTimestamp",
      description: "Time since creation",
    },
  ];

  const rootSchema = (spec: StructuralSchema, status?: StructuralSchema): StructuralSchema => {
    const properties: Record<string, StructuralSchema> = {
      apiVersion: {
        type: "string",
        description: "APIVersion defines the versioned schema of this representation of an object.",
      },
      kind: {
        type: "string",
        description:
          "Kind is a string value representing the REST resource this object represents.",
      },
      metadata: { type: "object" },
      spec,
    };
    if (status) properties.status = status;
    const root: StructuralSchema = { type: "object", properties };
    if (input.description) root.description = input.description;
    if (spec.required && spec.required.length > 0) root.required = ["spec"];
    return root;
  };

  const crd: Manifest = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: crdName, labels: { ...labels } },
    spec: {
      group,
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        categories,
        ...(input.shortNames?.length ? { shortNames: [...input.shortNames] } : {}),
      },
      scope: "Namespaced",
      versions: versions.map((name) => ({
        name,
        served: true,
        storage: name === storageVersion,
        schema: {
          openAPIV3Schema: rootSchema(schemasOf(name).specSchema, schemasOf(name).statusSchema),
        },
        subresources: { status: {} },
        additionalPrinterColumns: columns,
      })),
      ...structuredClone(conversionSpec),
    },
  };

  const templateRootOf = (specSchema: StructuralSchema): StructuralSchema => {
    const templateSpec: StructuralSchema = {
      type: "object",
      description: `spec defines the desired state of ${templateKind}.`,
      properties: {
        template: {
          type: "object",
          description: `template is the ${kind} to create from this template.`,
          properties: {
            metadata: {
              type: "object",
              description:
                "metadata is the standard object metadata (labels and annotations only).",
              minProperties: 1,
              properties: {
                labels: { type: "object", additionalProperties: { type: "string" } },
                annotations: { type: "object", additionalProperties: { type: "string" } },
              },
            },
            spec: specSchema,
          },
          required: ["spec"],
        },
      },
      required: ["template"],
    };
    const templateRoot = rootSchema(templateSpec);
    templateRoot.required = ["spec"];
    return templateRoot;
  };
  const templateCrd: Manifest = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: calculateCRDName(group, templateKind), labels: { ...labels } },
    spec: {
      group,
      names: {
        kind: templateKind,
        listKind: `${templateKind}List`,
        plural: templatePlural,
        singular: templateKind.toLowerCase(),
        categories,
      },
      scope: "Namespaced",
      versions: versions.map((name) => ({
        name,
        served: true,
        storage: name === storageVersion,
        schema: { openAPIV3Schema: templateRootOf(schemasOf(name).specSchema) },
      })),
      ...structuredClone(conversionSpec),
    },
  };

  const clusterRole: Manifest = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: input.clusterRoleName ?? `${crdName}-capi-manager`,
      labels: { [Labels.AggregateToManager]: "true" },
    },
    rules: [
      {
        apiGroups: [group],
        resources: [
          plural,
          `${plural}/finalizers`,
          templatePlural,
          ...(machine ? [machine.plural, `${machine.plural}/finalizers`] : []),
        ],
        verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
      },
    ],
  };

  const specZod = input.spec.extend(contractSpecZod);
  const statusZod = (input.status ?? z.object({})).extend(contractStatusZod);
  const schema = z.object({
    apiVersion: z.string(),
    kind: z.literal(kind),
    metadata: z.looseObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
    }),
    spec: specZod,
    status: statusZod.optional(),
  }) as unknown as z.ZodType<InfraMachinePoolObject<z.output<Spec>, z.output<Status>>>;

  const manifests = () => [
    structuredClone(crd),
    structuredClone(templateCrd),
    ...(machine ? [structuredClone(machine.crd)] : []),
    structuredClone(clusterRole),
  ];
  return {
    group,
    kind,
    listKind: `${kind}List`,
    plural,
    crdName,
    versions,
    storageVersion,
    apiVersion: `${group}/${storageVersion}`,
    resource: {
      group,
      version: storageVersion,
      plural,
      kind,
      scope: "Namespaced",
      subresources: { status: true },
    },
    templateKind,
    templateResource: {
      group,
      version: storageVersion,
      plural: templatePlural,
      kind: templateKind,
      scope: "Namespaced",
      subresources: { status: false },
    },
    finalizer,
    machine,
    conversion: spokes
      ? kindConversion({
          group,
          kind,
          templateKind,
          hub: storageVersion,
          versions,
          hubSchemas: { spec: input.spec, status: input.status },
          spokes: spokes as unknown as Readonly<
            Record<string, SpokeVersion<ConvertibleContent, ConvertibleContent>>
          >,
        })
      : undefined,
    crd,
    templateCrd,
    clusterRole,
    schema,
    manifests,
    toYAML: () =>
      manifests()
        .map((m) => `---\n${dump(m, { lineWidth: -1, noRefs: true })}`)
        .join(""),
  };
}

/**
 * Generates the TypeScript types (interfaces, zod schemas, Model classes, resource metadata) of a
 * defined kind and its template **from the CRDs themselves**, through `@capi-ts/codegen`'s `generate()` —
 * one source of truth. Returns the files in memory; write them with codegen's `writeGenerated`. Needs
 * `@capi-ts/codegen` installed (a build-time dependency).
 *
 * With the default `runtime: "compiled"`, the runtime modules are written as `.js` + `.d.ts`: a plain
 * `tsc` build copies those `.js` files to its output only with `"allowJs": true` in tsconfig (without it
 * the built code fails with `ERR_MODULE_NOT_FOUND …/api/common.js`). Pass `runtime: "source"` to get
 * TypeScript only, which any build compiles.
 *
 * @param definition - the defined kind (its CRD and template CRD are read)
 * @param options - `runtime: "source"` writes the runtime modules as TypeScript instead of compiled
 *   JavaScript with declarations (see codegen's `GenerateOptions.runtime`)
 * @returns the generated files, paths relative to the output folder
 * @example
 * ```ts
 * const files = await generateInfraMachinePoolTypes(FooMachinePool);
 * await writeGenerated(files, "src/api");
 * ```
 */
export async function generateInfraMachinePoolTypes(
  definition: Pick<InfraMachinePoolDefinition<z.ZodObject, z.ZodObject>, "crd" | "templateCrd">,
  options: { readonly runtime?: "compiled" | "source" } = {},
): Promise<ReadonlyArray<{ readonly path: string; readonly content: string }>> {
  let codegen: typeof import("@capi-ts/codegen");
  try {
    // A computed specifier keeps bundlers from inlining the code generator into the SDK build.
    const specifier = "@capi-ts/codegen";
    codegen = (await import(specifier)) as typeof import("@capi-ts/codegen");
  } catch (error) {
    throw new Error(
      `generating types needs @capi-ts/codegen; add it as a dev dependency (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const result = await codegen.generate({
    inputs: [
      {
        source: `${definition.crd.metadata.name} (defineInfraMachinePool)`,
        object: structuredClone(definition.crd),
      },
      {
        source: `${definition.templateCrd.metadata.name} (defineInfraMachinePool)`,
        object: structuredClone(definition.templateCrd),
      },
    ],
    runtime: options.runtime,
  });
  return result.files;
}
