import { badRequest, type InvalidCause, invalidValueCause } from "./errors.js";
import type { KubeObject, ResourceType } from "./types.js";

const IMMUTABLE = "field is immutable when `immutable` is set";

/** ConfigMap and Secret: once `immutable: true`, data and the flag itself cannot change. */
function immutableData(fields: string[]) {
  return (obj: KubeObject, old: KubeObject): InvalidCause[] => {
    if (old.immutable !== true) return [];
    const causes: InvalidCause[] = [];
    if (obj.immutable !== true) {
      causes.push({
        field: "immutable",
        reason: "FieldValueForbidden",
        message: `Forbidden: ${IMMUTABLE}`,
      });
    }
    for (const f of fields) {
      if (JSON.stringify(obj[f] ?? null) !== JSON.stringify(old[f] ?? null)) {
        causes.push({
          field: f,
          reason: "FieldValueForbidden",
          message: `Forbidden: ${IMMUTABLE}`,
        });
      }
    }
    return causes;
  };
}

const META_FIELDS = ["metadata.name", "metadata.namespace"];

function builtin(
  partial: Pick<ResourceType, "group" | "plural" | "singular" | "kind" | "namespaced"> &
    Partial<ResourceType> & { version: string },
): ResourceType {
  const { version, ...rest } = partial;
  const apiVersion = partial.group ? `${partial.group}/${version}` : version;
  return {
    listKind: `${partial.kind}List`,
    shortNames: [],
    categories: [],
    versions: [{ version }],
    storageApiVersion: apiVersion,
    storageKey: partial.group ? `${partial.group}/${partial.plural}` : partial.plural,
    statusSubresource: false,
    builtin: true,
    generation: "none",
    fieldSelectors: META_FIELDS,
    returnDeletedObject: false,
    allowUnconditionalUpdate: true,
    ...rest,
  };
}

/** Namespaces, as the real server: phase Active, the `kubernetes` finalizer and the name label. */
export const namespaces = builtin({
  group: "",
  version: "v1",
  plural: "namespaces",
  singular: "namespace",
  kind: "Namespace",
  namespaced: false,
  shortNames: ["ns"],
  statusSubresource: true,
  fieldSelectors: [...META_FIELDS, "status.phase"],
  prepareForCreate(obj) {
    const name = obj.metadata.name ?? "";
    obj.metadata.labels = { ...obj.metadata.labels, "kubernetes.io/metadata.name": name };
    const spec = (obj.spec ?? {}) as Record<string, unknown>;
    spec.finalizers = ["kubernetes"];
    obj.spec = spec;
    obj.status = { phase: "Active" };
  },
});

export const secrets = builtin({
  group: "",
  version: "v1",
  plural: "secrets",
  singular: "secret",
  kind: "Secret",
  namespaced: true,
  fieldSelectors: [...META_FIELDS, "type"],
  prepareForWrite(obj) {
    // stringData is write-only: the server folds it into data (base64) and never stores it.
    const stringData = obj.stringData as Record<string, string> | undefined;
    if (stringData && typeof stringData === "object") {
      const data = { ...((obj.data as Record<string, string> | undefined) ?? {}) };
      for (const [k, v] of Object.entries(stringData))
        data[k] = Buffer.from(String(v)).toString("base64");
      obj.data = data;
    }
    delete obj.stringData;
  },
  prepareForCreate(obj) {
    obj.type ??= "Opaque";
  },
  validateUpdate(obj, old) {
    const causes = immutableData(["data"])(obj, old);
    if ((obj.type ?? "Opaque") !== (old.type ?? "Opaque")) {
      causes.push(invalidValueCause("type", obj.type, "field is immutable"));
    }
    return causes;
  },
});

export const configMaps = builtin({
  group: "",
  version: "v1",
  plural: "configmaps",
  singular: "configmap",
  kind: "ConfigMap",
  namespaced: true,
  shortNames: ["cm"],
  validateUpdate: immutableData(["data", "binaryData"]),
});

export const nodes = builtin({
  group: "",
  version: "v1",
  plural: "nodes",
  singular: "node",
  kind: "Node",
  namespaced: false,
  shortNames: ["no"],
  statusSubresource: true,
  fieldSelectors: [...META_FIELDS, "spec.unschedulable"],
});

const CORE_EVENT_FIELDS = [
  ...META_FIELDS,
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];

const MICRO_TIME_LAYOUT = "2006-01-02T15:04:05.000000Z07:00";

/**
 * `eventTime` is a MicroTime: the server parses it with exactly six fractional digits and answers
 * 400 otherwise (a JavaScript `Date` serialized with milliseconds is refused).
 */
function checkMicroTime(obj: KubeObject): void {
  const value = obj.eventTime;
  if (value === undefined || value === null) return;
  if (
    typeof value === "string" &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/.test(value)
  )
    return;
  const text = String(value);
  const fraction = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(.*)$/.exec(text)?.[1];
  const detail =
    fraction !== undefined
      ? `cannot parse ${JSON.stringify(fraction)} as ".000000"`
      : "cannot parse it";
  throw badRequest(
    `Event in version "v1" cannot be handled as a Event: parsing time ${JSON.stringify(text)} as ${JSON.stringify(MICRO_TIME_LAYOUT)}: ${detail}`,
  );
}

export const coreEvents = builtin({
  group: "",
  version: "v1",
  plural: "events",
  singular: "event",
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  fieldSelectors: CORE_EVENT_FIELDS,
  prepareForWrite: checkMicroTime,
});

/** core/v1 field ↔ events.k8s.io/v1 field; the rest have the same name in both. */
const EVENT_RENAMES: [core: string, events: string][] = [
  ["involvedObject", "regarding"],
  ["message", "note"],
  ["reportingComponent", "reportingController"],
  ["source", "deprecatedSource"],
  ["firstTimestamp", "deprecatedFirstTimestamp"],
  ["lastTimestamp", "deprecatedLastTimestamp"],
  ["count", "deprecatedCount"],
];

function renameFields(obj: KubeObject, apiVersion: string, toEvents: boolean): KubeObject {
  const out: KubeObject = { ...obj, apiVersion };
  for (const [core, events] of EVENT_RENAMES) {
    const [from, to] = toEvents ? [core, events] : [events, core];
    if (from in out) {
      out[to] = out[from];
      delete out[from];
    }
  }
  return out;
}

/** events.k8s.io/v1 Events: the same storage as core Events, with the renamed fields converted. */
export const eventsV1 = builtin({
  group: "events.k8s.io",
  version: "v1",
  plural: "events",
  singular: "event",
  kind: "Event",
  namespaced: true,
  shortNames: ["ev"],
  storageApiVersion: "v1",
  storageKey: "events",
  fieldSelectors: CORE_EVENT_FIELDS,
  prepareForWrite: checkMicroTime,
  versions: [
    {
      version: "v1",
      toView: (obj) => renameFields(obj, "events.k8s.io/v1", true),
      fromView: (obj) => renameFields(obj, "v1", false),
    },
  ],
});

export const leases = builtin({
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  singular: "lease",
  kind: "Lease",
  namespaced: true,
});

/**
 * Pods, as far as a drain needs them: bound by `spec.nodeName` (no scheduler, no kubelet), listed by
 * the field selectors kube-apiserver supports for a drain, evicted through `pods/eviction`
 * (eviction.ts). A delete removes a Pod at once, whatever its grace period (DIVERGENCES.md).
 */
export const pods = builtin({
  group: "",
  version: "v1",
  plural: "pods",
  singular: "pod",
  kind: "Pod",
  namespaced: true,
  shortNames: ["po"],
  statusSubresource: true,
  returnDeletedObject: true,
  fieldSelectors: [...META_FIELDS, "spec.nodeName", "spec.restartPolicy", "status.phase"],
});

/** policy/v1 PodDisruptionBudgets; the eviction path computes their status (eviction.ts). */
export const podDisruptionBudgets = builtin({
  group: "policy",
  version: "v1",
  plural: "poddisruptionbudgets",
  singular: "poddisruptionbudget",
  kind: "PodDisruptionBudget",
  namespaced: true,
  shortNames: ["pdb"],
  statusSubresource: true,
  generation: "spec",
});

/** The built-in types other than CustomResourceDefinition (which lives in crd.ts). */
export const BUILTIN_TYPES: ResourceType[] = [
  namespaces,
  secrets,
  configMaps,
  nodes,
  coreEvents,
  eventsV1,
  leases,
  pods,
  podDisruptionBudgets,
];
