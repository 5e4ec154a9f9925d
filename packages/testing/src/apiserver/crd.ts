import { isDeepStrictEqual } from "node:util";
import type { ApiCore } from "./core.js";
import { type InvalidCause, invalidValueCause, requiredCause } from "./errors.js";
import { type ResolvedResource, storageView } from "./registry.js";
import type { KubeObject, ResourceType, ServedVersion, ValidationStrategy } from "./types.js";

/** Finalizer the server adds to a CRD on delete; removed once every custom resource is gone. */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

/** Turns a version's `openAPIV3Schema` into the validation strategy (the schema engine). */
export type SchemaCompiler = (openAPIV3Schema: unknown) => ValidationStrategy;

interface CrdVersion {
  name?: string;
  served?: boolean;
  storage?: boolean;
  schema?: { openAPIV3Schema?: unknown };
  subresources?: {
    status?: unknown;
    scale?: { specReplicasPath?: string; statusReplicasPath?: string; labelSelectorPath?: string };
  };
  selectableFields?: { jsonPath?: string }[];
}

interface CrdSpec {
  group?: string;
  scope?: string;
  names?: {
    plural?: string;
    singular?: string;
    kind?: string;
    listKind?: string;
    shortNames?: string[];
    categories?: string[];
  };
  versions?: CrdVersion[];
}

/** The CustomResourceDefinition kind itself. */
export function crdResourceType(validate: (obj: KubeObject) => InvalidCause[]): ResourceType {
  return {
    group: "apiextensions.k8s.io",
    plural: "customresourcedefinitions",
    singular: "customresourcedefinition",
    kind: "CustomResourceDefinition",
    listKind: "CustomResourceDefinitionList",
    namespaced: false,
    shortNames: ["crd", "crds"],
    categories: ["api-extensions"],
    versions: [{ version: "v1" }],
    storageApiVersion: "apiextensions.k8s.io/v1",
    storageKey: "apiextensions.k8s.io/customresourcedefinitions",
    statusSubresource: true,
    builtin: true,
    generation: "spec",
    fieldSelectors: ["metadata.name"],
    returnDeletedObject: true,
    allowUnconditionalUpdate: true,
    finalizersOnDelete: [CRD_CLEANUP_FINALIZER],
    strategy: { validate: (obj) => validate(obj) },
  };
}

/** Structural checks of a CRD the real server rejects with 422. */
export function validateCrd(obj: KubeObject, compile: SchemaCompiler | undefined): InvalidCause[] {
  const spec = (obj.spec ?? {}) as CrdSpec;
  const causes: InvalidCause[] = [];
  if (!spec.group) causes.push(requiredCause("spec.group"));
  if (!spec.names?.plural) causes.push(requiredCause("spec.names.plural"));
  if (!spec.names?.kind) causes.push(requiredCause("spec.names.kind"));
  if (spec.scope !== "Namespaced" && spec.scope !== "Cluster") {
    causes.push({
      field: "spec.scope",
      reason: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(spec.scope ?? "")}: supported values: "Cluster", "Namespaced"`,
    });
  }
  if (
    spec.group &&
    spec.names?.plural &&
    obj.metadata.name !== `${spec.names.plural}.${spec.group}`
  ) {
    causes.push(
      invalidValueCause(
        "metadata.name",
        obj.metadata.name,
        'must be spec.names.plural+"."+spec.group',
      ),
    );
  }
  const versions = spec.versions ?? [];
  if (versions.length === 0)
    causes.push(
      requiredCause("spec.versions", "must have exactly one version marked as storage version"),
    );
  const storage = versions.filter((v) => v.storage === true);
  if (versions.length > 0 && storage.length !== 1) {
    causes.push(
      invalidValueCause(
        "spec.versions",
        versions.map((v) => v.name),
        "must have exactly one version marked as storage version",
      ),
    );
  }
  if (versions.length > 0 && !versions.some((v) => v.served)) {
    causes.push(
      invalidValueCause(
        "spec.versions",
        versions.map((v) => v.name),
        "must have at least one version marked as served",
      ),
    );
  }
  versions.forEach((v, i) => {
    if (!v.name) causes.push(requiredCause(`spec.versions[${i}].name`));
    const schema = v.schema?.openAPIV3Schema;
    if (schema === undefined) {
      causes.push(
        requiredCause(`spec.versions[${i}].schema.openAPIV3Schema`, "schemas are required"),
      );
    } else if (compile) {
      try {
        compile(schema);
      } catch (e) {
        causes.push({
          field: `spec.versions[${i}].schema.openAPIV3Schema`,
          reason: "FieldValueInvalid",
          message: `Invalid value: "": ${(e as Error).message}`,
        });
      }
    }
  });
  return causes;
}

/** The resource type a CRD defines, serving every served version from one storage. */
export function typeFromCrd(
  crd: KubeObject,
  compile: SchemaCompiler | undefined,
): ResourceType | undefined {
  const spec = (crd.spec ?? {}) as CrdSpec;
  const names = spec.names ?? {};
  if (!spec.group || !names.plural || !names.kind) return undefined;
  const served: ServedVersion[] = [];
  let statusSubresource = false;
  let scale: ResourceType["scale"];
  const selectable = new Set<string>(["metadata.name", "metadata.namespace"]);
  const storage = (spec.versions ?? []).find((v) => v.storage) ?? spec.versions?.[0];
  for (const v of spec.versions ?? []) {
    if (!v.served || !v.name) continue;
    const schema = v.schema?.openAPIV3Schema;
    served.push({
      version: v.name,
      strategy: schema !== undefined && compile ? compile(schema) : undefined,
    });
    if (v.subresources?.status !== undefined) statusSubresource = true;
    const sc = v.subresources?.scale;
    if (sc?.specReplicasPath && sc.statusReplicasPath) {
      scale = {
        specReplicasPath: sc.specReplicasPath,
        statusReplicasPath: sc.statusReplicasPath,
        labelSelectorPath: sc.labelSelectorPath,
      };
    }
    for (const f of v.selectableFields ?? []) {
      if (f.jsonPath) selectable.add(f.jsonPath.replace(/^\./, ""));
    }
  }
  if (served.length === 0 || !storage?.name) return undefined;
  return {
    group: spec.group,
    plural: names.plural,
    singular: names.singular ?? names.kind.toLowerCase(),
    kind: names.kind,
    listKind: names.listKind ?? `${names.kind}List`,
    namespaced: spec.scope !== "Cluster",
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    versions: served,
    storageApiVersion: `${spec.group}/${storage.name}`,
    storageKey: `${spec.group}/${names.plural}`,
    statusSubresource,
    scale,
    builtin: false,
    generation: "allButMetadataAndStatus",
    fieldSelectors: [...selectable],
    // kube-apiserver answers a custom resource's immediate delete with a Success Status.
    returnDeletedObject: false,
    allowUnconditionalUpdate: false,
    crdName: crd.metadata.name,
  };
}

/**
 * The apiextensions controllers: serve what a CRD defines, keep its status conditions, and clean up
 * custom resources when it is deleted.
 */
export class CrdController {
  private readonly served = new Map<string, ResourceType>();
  private readonly pendingStatus = new Set<string>();
  private statusScheduled = false;
  /** Called when the set of served types changes (the watch hub closes orphaned watches). */
  onTypesChanged: () => void = () => {};

  constructor(
    private readonly core: ApiCore,
    private readonly crdType: ResourceType,
    private readonly compile: SchemaCompiler | undefined,
  ) {
    core.hooks.onCrdChange = (crd, previous) => this.changed(crd, previous);
    core.hooks.onDeleting = (res, obj) => this.deleting(res, obj);
  }

  private changed(crd: KubeObject | undefined, previous: KubeObject | undefined): void {
    const name = (crd ?? previous)?.metadata.name ?? "";
    const existing = this.served.get(name);
    if (!crd) {
      if (existing) {
        this.core.registry.unregister(existing);
        this.core.store.dropTable(existing.storageKey);
        this.served.delete(name);
        this.onTypesChanged();
      }
      return;
    }
    if (existing && previous && isDeepStrictEqual(crd.spec, previous.spec)) {
      // Only status or metadata changed: what is served stays the same.
      this.pendingStatus.add(name);
      this.scheduleStatus();
      return;
    }
    const rt = typeFromCrd(crd, this.compile);
    const conflict = rt ? this.kindConflict(rt) : undefined;
    if (existing) this.core.registry.unregister(existing);
    if (rt && !conflict) {
      // Keep the same object so open watches stay attached while the CRD changes.
      const target = existing ? Object.assign(existing, rt) : rt;
      this.core.registry.register(target);
      this.served.set(name, target);
    } else {
      this.served.delete(name);
    }
    this.onTypesChanged();
    this.pendingStatus.add(name);
    this.scheduleStatus();
  }

  private kindConflict(rt: ResourceType): string | undefined {
    for (const other of this.core.registry.all()) {
      if (other.group !== rt.group || other.crdName === rt.crdName) continue;
      if (other.plural === rt.plural) return `"${rt.plural}" is already in use`;
      if (other.kind === rt.kind) return `"${rt.kind}" is already in use`;
    }
    return undefined;
  }

  private scheduleStatus(): void {
    if (this.statusScheduled) return;
    this.statusScheduled = true;
    setImmediate(() => {
      this.statusScheduled = false;
      for (const name of [...this.pendingStatus]) {
        this.pendingStatus.delete(name);
        this.writeStatus(name);
      }
    });
  }

  /** Sets NamesAccepted/Established (and Terminating), acceptedNames and storedVersions. */
  private writeStatus(name: string): void {
    const res = storageView(this.crdType);
    const current = this.core.store.get(this.crdType.storageKey, name)?.obj;
    if (!res || !current) return;
    const spec = (current.spec ?? {}) as CrdSpec;
    const rt = this.served.get(name);
    const accepted = rt !== undefined;
    const status = structuredClone((current.status ?? {}) as Record<string, unknown>);
    const now = this.core.now();
    const conditions = (status.conditions ?? []) as {
      type: string;
      status: string;
      reason: string;
      message: string;
      lastTransitionTime?: string;
    }[];
    const setCondition = (type: string, value: string, reason: string, message: string) => {
      const prior = conditions.find((c) => c.type === type);
      if (prior) {
        if (prior.status !== value) prior.lastTransitionTime = now;
        prior.status = value;
        prior.reason = reason;
        prior.message = message;
      } else {
        conditions.push({ type, status: value, lastTransitionTime: now, reason, message });
      }
    };
    const conflict = accepted ? undefined : "the names or versions could not be served";
    setCondition(
      "NamesAccepted",
      accepted ? "True" : "False",
      accepted ? "NoConflicts" : "NameConflict",
      accepted ? "no conflicts found" : (conflict ?? ""),
    );
    setCondition(
      "Established",
      accepted ? "True" : "False",
      accepted ? "InitialNamesAccepted" : "NotAccepted",
      accepted ? "the initial names have been accepted" : "not all names are accepted",
    );
    if (current.metadata.deletionTimestamp !== undefined) {
      setCondition(
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
      );
    }
    status.conditions = conditions;
    if (accepted) status.acceptedNames = { ...spec.names };
    const storageVersion = (spec.versions ?? []).find((v) => v.storage)?.name;
    const stored = new Set<string>((status.storedVersions as string[] | undefined) ?? []);
    if (storageVersion) stored.add(storageVersion);
    status.storedVersions = [...stored];
    const next = structuredClone(current);
    next.status = status;
    this.core.commitUpdate(res, current, next, { subresource: "status" });
  }

  private deleting(res: ResolvedResource, obj: KubeObject): void {
    if (res.rt !== this.crdType) return;
    if (!(obj.metadata.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER)) return;
    const name = obj.metadata.name ?? "";
    const rt = this.served.get(name);
    if (
      !(obj.status as { conditions?: { type: string }[] } | undefined)?.conditions?.some(
        (c) => c.type === "Terminating",
      )
    ) {
      this.pendingStatus.add(name);
      this.scheduleStatus();
    }
    if (rt) {
      const view = storageView(rt);
      const remaining = this.core.store.list(rt.storageKey);
      if (view && remaining.length > 0) {
        for (const s of remaining) {
          if (s.obj.metadata.deletionTimestamp === undefined) {
            this.core.safeDelete(view, s.obj, { propagationPolicy: "Background" });
          }
        }
        return;
      }
    }
    this.core.removeFinalizer(res, obj, CRD_CLEANUP_FINALIZER);
  }

  /** Whether a CRD is served and Established (for installCRDs). */
  isEstablished(name: string): boolean {
    const obj = this.core.store.get(this.crdType.storageKey, name)?.obj;
    const conditions = (
      obj?.status as { conditions?: { type: string; status: string }[] } | undefined
    )?.conditions;
    return (
      this.served.has(name) &&
      conditions?.some((c) => c.type === "Established" && c.status === "True") === true
    );
  }
}
