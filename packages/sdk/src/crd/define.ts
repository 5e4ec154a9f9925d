import { dump } from "js-yaml";
import * as z from "zod";
import { pluralize } from "../conditions/pluralize.js";
import { CLUSTER_API_GROUP, contractLabel, finalizerFor, Labels } from "../contract/constants.js";
import { calculateCRDName } from "../contract/format.js";
import {
  CONTRACT_SPEC_KEYS,
  CONTRACT_STATUS_KEYS,
  contractSpecProperties,
  contractSpecZod,
  contractStatusProperties,
  contractStatusZod,
} from "./contract-fields.js";
import { type ConvertibleContent, kindConversion, type SpokeVersion } from "./conversion.js";
import type {
  InfraMachinePoolDefinition,
  InfraMachinePoolInput,
  InfraMachinePoolObject,
} from "./definition.js";
import { derivedNameProblems } from "./derived-names.js";
import { infraMachineDefinition } from "./machine.js";
import type { Manifest } from "./manifest.js";
import {
  NonStructuralSchemaError,
  type StructuralSchema,
  zodToStructuralSchema,
} from "./structural.js";

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
