import * as z from "zod";
import {
  MAX_CAPACITY_QUANTITY_LENGTH,
  MAX_CAPACITY_RESOURCES,
  NODE_ARCHITECTURES,
  NODE_OPERATING_SYSTEMS,
} from "../contract/capacity.js";
import { UNSIGNED_QUANTITY_PATTERN } from "../runtime/quantity.js";
import type { StructuralSchema } from "./structural.js";

// The exact validation the contract asks for (R8, R10, R11, R12, R13, R15); the condition schema is
// metav1.Condition as controller-gen renders it.

/** `spec.providerIDList` (R8): atomic list, ≤ 10,000 items of 1–512 characters. */
export const providerIDListSchema: StructuralSchema = {
  type: "array",
  description:
    "providerIDList are the identification IDs of machine instances provided by the provider. This field must match the provider IDs as seen on the node objects corresponding to a machine pool's machine instances.",
  maxItems: 10000,
  items: { type: "string", minLength: 1, maxLength: 512 },
  "x-kubernetes-list-type": "atomic",
};

/** `spec.providerID` (R12): 1–512 characters. */
export const providerIDSchema: StructuralSchema = {
  type: "string",
  description:
    "providerID is the identification ID of the Machine Pool (for example an autoscaling group ID).",
  minLength: 1,
  maxLength: 512,
};

/** One `metav1.Condition`. */
export const conditionItemSchema: StructuralSchema = {
  type: "object",
  description:
    "Condition contains details for one aspect of the current state of this API Resource.",
  properties: {
    lastTransitionTime: {
      type: "string",
      format: "date-time",
      description:
        "lastTransitionTime is the last time the condition transitioned from one status to another.",
    },
    message: {
      type: "string",
      maxLength: 32768,
      description:
        "message is a human readable message indicating details about the transition. This may be an empty string.",
    },
    observedGeneration: {
      type: "integer",
      format: "int64",
      minimum: 0,
      description:
        "observedGeneration represents the .metadata.generation that the condition was set based upon.",
    },
    reason: {
      type: "string",
      minLength: 1,
      maxLength: 1024,
      pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
      description:
        "reason contains a programmatic identifier indicating the reason for the condition's last transition.",
    },
    status: {
      type: "string",
      enum: ["True", "False", "Unknown"],
      description: "status of the condition, one of True, False, Unknown.",
    },
    type: {
      type: "string",
      maxLength: 316,
      pattern:
        "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
      description: "type of condition in CamelCase or in foo.example.com/CamelCase.",
    },
  },
  required: ["lastTransitionTime", "message", "reason", "status", "type"],
};

/** `status.conditions` (R15): list-map keyed by type, at most 32. */
export const conditionsSchema: StructuralSchema = {
  type: "array",
  description:
    "conditions represent the observations of the pool's current state (Ready, Paused, …).",
  maxItems: 32,
  items: conditionItemSchema,
  "x-kubernetes-list-map-keys": ["type"],
  "x-kubernetes-list-type": "map",
};

/** `status.instances` (R13), the DevMachinePool shape. */
export const instancesSchema: StructuralSchema = {
  type: "array",
  description: "instances contains the status of each instance in the pool (informational).",
  items: {
    type: "object",
    properties: {
      addresses: {
        type: "array",
        items: {
          type: "object",
          properties: {
            address: { type: "string", minLength: 1, maxLength: 256 },
            type: {
              type: "string",
              enum: ["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"],
            },
          },
          required: ["address", "type"],
        },
      },
      instanceName: { type: "string" },
      providerID: { type: "string" },
      ready: { type: "boolean" },
      version: { type: "string" },
    },
  },
};

/**
 * `status.capacity`: what one instance offers, resource name → quantity, read by the
 * cluster-autoscaler to scale an empty pool (scale from zero). Strings only, unlike a
 * `corev1.ResourceList` (int-or-string): the autoscaler reads the map as strings and ignores all of it
 * when one value is an integer.
 */
export const capacitySchema: StructuralSchema = {
  type: "object",
  description:
    "capacity is what one instance of the pool offers, by resource name (cpu, memory, ephemeral-storage, pods, nvidia.com/gpu, …), each a Kubernetes quantity. The cluster-autoscaler builds the node template of an empty pool from it (scale from zero).",
  maxProperties: MAX_CAPACITY_RESOURCES,
  additionalProperties: {
    type: "string",
    maxLength: MAX_CAPACITY_QUANTITY_LENGTH,
    pattern: UNSIGNED_QUANTITY_PATTERN,
  },
};

/** `status.nodeInfo`: the architecture and operating system of the pool's Nodes, as Nodes report them. */
export const nodeInfoSchema: StructuralSchema = {
  type: "object",
  description:
    "nodeInfo is the architecture and operating system of the pool's Nodes, as their status.nodeInfo reports them. The cluster-autoscaler labels the node template of an empty pool with them (kubernetes.io/arch, kubernetes.io/os).",
  properties: {
    architecture: {
      type: "string",
      description:
        "architecture is the CPU architecture of the Nodes (Go's GOARCH: amd64, arm64, …).",
      enum: [...NODE_ARCHITECTURES],
    },
    operatingSystem: {
      type: "string",
      description: "operatingSystem is the operating system of the Nodes: linux or windows.",
      enum: [...NODE_OPERATING_SYSTEMS],
    },
  },
};

/** The contract fields injected into `spec`. */
export function contractSpecProperties(): Record<string, StructuralSchema> {
  return { providerIDList: providerIDListSchema, providerID: providerIDSchema };
}

/** The contract fields injected into `status`. */
export function contractStatusProperties(options: {
  machinePoolMachines: boolean;
  instances: boolean;
}): Record<string, StructuralSchema> {
  const properties: Record<string, StructuralSchema> = {
    ready: {
      type: "boolean",
      description:
        "ready is true once the pool is provisioned; core's MachinePool controller reads it (kept equal to initialization.provisioned).",
    },
    initialization: {
      type: "object",
      description: "initialization provides observations of the pool's initialization process.",
      minProperties: 1,
      properties: {
        provisioned: {
          type: "boolean",
          description:
            "provisioned is true when the infrastructure provider reports that the pool is fully provisioned.",
        },
      },
    },
    replicas: {
      type: "integer",
      format: "int32",
      minimum: 0,
      description: "replicas is the most recently observed number of instances in the pool.",
    },
    conditions: conditionsSchema,
    capacity: capacitySchema,
    nodeInfo: nodeInfoSchema,
    observedGeneration: {
      type: "integer",
      format: "int64",
      minimum: 1,
      description: "observedGeneration is the latest generation observed by the controller.",
    },
  };
  if (options.machinePoolMachines) {
    properties.infrastructureMachineKind = {
      type: "string",
      minLength: 1,
      description:
        "infrastructureMachineKind is the kind of the InfraMachines behind MachinePool Machines.",
    };
  }
  if (options.instances) properties.instances = instancesSchema;
  return properties;
}

/** zod twin of one `metav1.Condition` (shared by the pool's and the InfraMachine's `status.conditions`). */
export const conditionZod = z.object({
  type: z.string().max(316),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: z.string(),
  reason: z.string().min(1).max(1024),
  message: z.string().max(32768),
});

/** zod twin of the injected spec fields. */
export const contractSpecZod = {
  providerIDList: z.array(z.string().min(1).max(512)).max(10000).optional(),
  providerID: z.string().min(1).max(512).optional(),
};

/** zod twin of the injected status fields. */
export const contractStatusZod = {
  ready: z.boolean().optional(),
  initialization: z.object({ provisioned: z.boolean().optional() }).optional(),
  replicas: z.int32().min(0).optional(),
  conditions: z.array(conditionZod).max(32).optional(),
  capacity: z
    .record(
      z.string(),
      z.string().max(MAX_CAPACITY_QUANTITY_LENGTH).regex(new RegExp(UNSIGNED_QUANTITY_PATTERN)),
    )
    .optional(),
  nodeInfo: z
    .object({
      architecture: z.enum(NODE_ARCHITECTURES).optional(),
      operatingSystem: z.enum(NODE_OPERATING_SYSTEMS).optional(),
    })
    .optional(),
  observedGeneration: z.int().min(1).optional(),
  infrastructureMachineKind: z.string().min(1).optional(),
  instances: z
    .array(
      z.object({
        addresses: z
          .array(
            z.object({
              address: z.string().min(1).max(256),
              type: z.enum(["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"]),
            }),
          )
          .optional(),
        instanceName: z.string().optional(),
        providerID: z.string().optional(),
        ready: z.boolean().optional(),
        version: z.string().optional(),
      }),
    )
    .optional(),
};

/** The spec fields the contract owns; a provider's schema must not declare them. */
export const CONTRACT_SPEC_KEYS: readonly string[] = ["providerIDList", "providerID"];

/** The status fields the contract owns (and the two core panics on, G4). */
export const CONTRACT_STATUS_KEYS: readonly string[] = [
  "ready",
  "initialization",
  "replicas",
  "conditions",
  "capacity",
  "nodeInfo",
  "observedGeneration",
  "infrastructureMachineKind",
  "instances",
  "failureReason",
  "failureMessage",
];
