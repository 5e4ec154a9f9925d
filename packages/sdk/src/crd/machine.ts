/**
 * The InfraMachine kind behind MachinePool Machines (contract R11, §3): one object per cloud
 * instance, created and kept by the provider kit, so that core creates a Machine for each instance
 * (per-instance status, cordon and drain before an instance is deleted, `cluster.x-k8s.io/delete-machine`,
 * MachineHealthChecks). `defineInfraMachinePool({ machinePoolMachines: true })` defines it next to
 * the pool kind, in the same group and versions, since core lists it at the pool's apiVersion.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import * as z from "zod";
import { pluralize } from "../conditions/pluralize.js";
import { contractLabel, finalizerFor, Labels } from "../contract/constants.js";
import { calculateCRDName } from "../contract/format.js";
import { conditionsSchema, conditionZod, providerIDSchema } from "./contract-fields.js";
import type { Manifest } from "./manifest.js";
import type { StructuralSchema } from "./structural.js";

/** Where an InfraMachine kind is served: a runtime `ResourceDescriptor` as is. */
export interface InfraMachineResource {
  /** The pool's API group. */
  readonly group: string;
  /** The pool's storage version. */
  readonly version: string;
  /** Plural resource name, e.g. `foomachinepoolmachines`. */
  readonly plural: string;
  /** The kind, e.g. `FooMachinePoolMachine`. */
  readonly kind: string;
  /** InfraMachines are namespaced, in the pool's namespace. */
  readonly scope: "Namespaced";
  /** The kit writes status through `/status`. */
  readonly subresources: { readonly status: true };
}

/** One address of an instance, as core's Machine copies it (`MachineAddress`). */
export interface InfraMachineAddress {
  /** `Hostname`, `ExternalIP`, `InternalIP`, `ExternalDNS` or `InternalDNS`. */
  readonly type: "Hostname" | "ExternalIP" | "InternalIP" | "ExternalDNS" | "InternalDNS";
  /** The address, e.g. `10.0.1.17` or `ip-10-0-1-17.ec2.internal`. */
  readonly address: string;
}

/**
 * An InfraMachine object of a pool (what the kit writes; core and its Machine controller add the
 * owner Machine and labels of their own).
 */
export type InfraMachineObject = KubernetesObject & {
  /** The instance this object stands for. */
  spec?: {
    /** The instance's providerID, byte for byte as on its Node (never empty). */
    providerID?: string;
    /** The cloud's own ID of the instance. */
    instanceID?: string;
  };
  /** What the kit last saw of the instance. */
  status?: {
    /** v1beta1 InfraMachine contract: equal to `initialization.provisioned`. */
    ready?: boolean;
    /** v1beta2 InfraMachine contract: `provisioned` turns true once the instance runs, and stays. */
    initialization?: { provisioned?: boolean };
    /** The instance's addresses, copied by core onto the Machine. */
    addresses?: InfraMachineAddress[];
    /** The zone the instance runs in. */
    failureDomain?: string;
    /** The kit's view of the instance's lifecycle (`pending`, `running`, `failed`, …). */
    instanceState?: string;
    /** Whether the instance runs the pool's current template (or the group's latest model). */
    upToDate?: boolean;
    /**
     * True for an instance on capacity the cloud may reclaim (spot, preemptible): core labels its
     * Node `cluster.x-k8s.io/interruptible` (InfraMachine contract).
     */
    interruptible?: boolean;
    /** v1beta2 conditions: `Ready` (the instance runs and passes the cloud's health check). */
    conditions?: Array<{
      type: string;
      status: "True" | "False" | "Unknown";
      observedGeneration?: number;
      lastTransitionTime: string;
      reason: string;
      message: string;
    }>;
    [key: string]: unknown;
  };
};

/** The InfraMachine kind of a pool kind, as {@link defineInfraMachinePool} returns it in `machine`. */
export interface InfraMachineDefinition {
  /** The pool kind's group. */
  readonly group: string;
  /** The kind, by default `<PoolKind>Machine`, e.g. `FooMachinePoolMachine`. */
  readonly kind: string;
  /** `<Kind>List`: core lists InfraMachines with it. */
  readonly listKind: string;
  /** Plural resource name. */
  readonly plural: string;
  /** CRD name, `calculateCRDName(group, kind)`. */
  readonly crdName: string;
  /** The pool's served versions (core reads InfraMachines at the pool's apiVersion). */
  readonly versions: readonly string[];
  /** The pool's storage version. */
  readonly storageVersion: string;
  /** `apiVersion` of objects at the storage version. */
  readonly apiVersion: string;
  /** Where objects are served (storage version). */
  readonly resource: InfraMachineResource;
  /**
   * The kit's finalizer on each InfraMachine, `<kind-lowercase>.<group>`: it holds the object while
   * the Machine controller deletes it, until the cloud instance is gone.
   */
  readonly finalizer: string;
  /** The CRD, with the contract label core's Machine controller reads. */
  readonly crd: Manifest;
  /** zod schema of a whole object. */
  readonly schema: z.ZodType<InfraMachineObject>;
}

const ADDRESS_TYPES = ["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"];

const specSchema: StructuralSchema = {
  type: "object",
  description: "spec identifies the cloud instance this InfraMachine stands for.",
  properties: {
    providerID: {
      ...providerIDSchema,
      description: "providerID is the instance's providerID, exactly as on its Node.",
    },
    instanceID: {
      type: "string",
      minLength: 1,
      maxLength: 512,
      description: "instanceID is the cloud's own ID of the instance.",
    },
  },
  required: ["providerID"],
};

const statusSchema: StructuralSchema = {
  type: "object",
  description: "status is what the provider last observed of the instance.",
  properties: {
    ready: {
      type: "boolean",
      description:
        "ready is true once the instance runs (v1beta1 contract; kept equal to initialization.provisioned).",
    },
    initialization: {
      type: "object",
      minProperties: 1,
      description: "initialization provides observations of the instance's initialization.",
      properties: {
        provisioned: {
          type: "boolean",
          description: "provisioned is true once the instance runs; it stays true.",
        },
      },
    },
    addresses: {
      type: "array",
      maxItems: 32,
      description: "addresses of the instance.",
      items: {
        type: "object",
        properties: {
          type: { type: "string", enum: ADDRESS_TYPES },
          address: { type: "string", minLength: 1, maxLength: 256 },
        },
        required: ["type", "address"],
      },
      "x-kubernetes-list-type": "atomic",
    },
    failureDomain: {
      type: "string",
      minLength: 1,
      maxLength: 256,
      description: "failureDomain is the zone the instance runs in.",
    },
    instanceState: {
      type: "string",
      enum: ["pending", "running", "stopping", "stopped", "failed", "terminating", "terminated"],
      description: "instanceState is the instance's lifecycle state as the provider maps it.",
    },
    upToDate: {
      type: "boolean",
      description: "upToDate is true when the instance runs the pool's current template.",
    },
    interruptible: {
      type: "boolean",
      description:
        "interruptible is true for an instance on capacity the cloud may reclaim (spot, preemptible); core labels its Node cluster.x-k8s.io/interruptible.",
    },
    conditions: {
      ...conditionsSchema,
      description: "conditions of the instance (Ready).",
    },
  },
};

/**
 * The InfraMachine kind of a pool kind: its CRD (contract label with the pool's versions, status
 * subresource, category `cluster-api`), resource and finalizer.
 *
 * @example
 * ```ts
 * const machine = infraMachineDefinition({
 *   group: "infrastructure.foo.com", poolKind: "FooMachinePool", versions: ["v1beta2"], storageVersion: "v1beta2",
 * });
 * machine.kind; // "FooMachinePoolMachine"
 * ```
 */
export function infraMachineDefinition(input: {
  readonly group: string;
  readonly poolKind: string;
  readonly kind?: string;
  readonly versions: readonly string[];
  readonly storageVersion: string;
}): InfraMachineDefinition {
  const { group, versions, storageVersion } = input;
  const kind = input.kind ?? `${input.poolKind}Machine`;
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind) || kind === input.poolKind || kind.endsWith("List")) {
    throw new Error(
      `defineInfraMachinePool: machinePoolMachines.kind ${JSON.stringify(kind)} must be CamelCase, differ from the pool kind and not end in List, e.g. "${input.poolKind}Machine"`,
    );
  }
  if (kind === `${input.poolKind}Template`) {
    throw new Error(
      `defineInfraMachinePool: machinePoolMachines.kind ${kind} is the pool's template kind; pick another, e.g. "${input.poolKind}Machine"`,
    );
  }
  const plural = pluralize(kind.toLowerCase());
  const crdName = calculateCRDName(group, kind);
  const columns = [
    {
      name: "Cluster",
      type: "string",
      jsonPath: `.metadata.labels['${Labels.ClusterName.replace(/\./g, "\\.")}']`,
      description: "Cluster",
    },
    {
      name: "ProviderID",
      type: "string",
      jsonPath: ".spec.providerID",
      description: "The instance's providerID",
    },
    {
      name: "State",
      type: "string",
      jsonPath: ".status.instanceState",
      description: "The instance's lifecycle state",
    },
    {
      name: "Provisioned",
      type: "boolean",
      jsonPath: ".status.initialization.provisioned",
      description: "The instance runs",
    },
    {
      name: "Age",
      type: "date",
      jsonPath: ".metadata.creationTimestamp",
      description: "Time since creation",
    },
  ];
  const crd: Manifest = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: crdName, labels: { [contractLabel("v1beta2")]: versions.join("_") } },
    spec: {
      group,
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        categories: ["cluster-api"],
      },
      scope: "Namespaced",
      versions: versions.map((name) => ({
        name,
        served: true,
        storage: name === storageVersion,
        schema: {
          openAPIV3Schema: {
            type: "object",
            description: `${kind} is one instance of a ${input.poolKind}, behind one MachinePool Machine.`,
            properties: {
              apiVersion: { type: "string" },
              kind: { type: "string" },
              metadata: { type: "object" },
              spec: specSchema,
              status: statusSchema,
            },
            required: ["spec"],
          },
        },
        subresources: { status: {} },
        additionalPrinterColumns: columns,
      })),
    },
  };
  const schema = z.object({
    apiVersion: z.string().optional(),
    kind: z.literal(kind).optional(),
    metadata: z.looseObject({ name: z.string().optional(), namespace: z.string().optional() }),
    spec: z.object({
      providerID: z.string().min(1).max(512),
      instanceID: z.string().min(1).max(512).optional(),
    }),
    status: z
      .looseObject({
        ready: z.boolean().optional(),
        initialization: z.object({ provisioned: z.boolean().optional() }).optional(),
        addresses: z
          .array(
            z.object({
              type: z.enum(["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"]),
              address: z.string().min(1).max(256),
            }),
          )
          .max(32)
          .optional(),
        failureDomain: z.string().min(1).max(256).optional(),
        instanceState: z.string().optional(),
        upToDate: z.boolean().optional(),
        interruptible: z.boolean().optional(),
        conditions: z.array(conditionZod).max(32).optional(),
      })
      .optional(),
  }) as unknown as z.ZodType<InfraMachineObject>;
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
    finalizer: finalizerFor(kind, group),
    crd,
    schema,
  };
}
