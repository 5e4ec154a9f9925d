/**
 * What a write passes before it is stored: the body's kind and version, pruning, defaulting and
 * validation, the namespace still accepting content, and whether the write bumps the generation.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { ApiError, badRequest, type InvalidCause, invalid, notFound } from "./errors.js";
import { validateObjectMeta } from "./meta-validation.js";
import { groupVersion, type ResolvedResource } from "./registry.js";
import type { Store } from "./store.js";
import type { KubeObject, ResourceType, ValidationStrategy } from "./types.js";
import { isObject, nowTimestamp } from "./values.js";

/** The served version's validation, else the resource's. */
export function strategyOf(res: ResolvedResource): ValidationStrategy | undefined {
  return res.served.strategy ?? res.rt.strategy;
}

/** The body of a write as an object of the request's kind and version, or the decoder's 400. */
export function checkBody(res: ResolvedResource, body: unknown): KubeObject {
  const rt = res.rt;
  if (body === undefined) {
    throw badRequest(
      `the object provided is unrecognized (must be of type ${rt.kind}): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`,
    );
  }
  if (!isObject(body)) {
    throw badRequest(
      `the object provided is unrecognized (must be of type ${rt.kind}): couldn't get version/kind; json parse error: json: cannot unmarshal ${Array.isArray(body) ? "array" : typeof body} into Go value of type struct`,
    );
  }
  const kind = body.kind;
  if (kind !== undefined && kind !== rt.kind) {
    throw badRequest(
      `the kind of the object (${String(kind)}) does not match the kind of the resource (${rt.kind}): send ${rt.kind} to ${rt.plural}`,
    );
  }
  const apiVersion = body.apiVersion;
  if (apiVersion !== undefined && apiVersion !== res.apiVersion) {
    throw badRequest(
      `the API version in the data (${String(apiVersion)}) does not match the expected API version (${res.apiVersion})`,
    );
  }
  const out = { ...body, apiVersion: res.apiVersion, kind: rt.kind } as KubeObject;
  const managed = isObject(out.metadata) ? out.metadata.managedFields : undefined;
  if (Array.isArray(managed)) {
    // Clients serialize metav1.Time with milliseconds; the server stores seconds.
    out.metadata = {
      ...out.metadata,
      managedFields: managed.map((m: unknown) =>
        isObject(m) && typeof m.time === "string" && !Number.isNaN(Date.parse(m.time))
          ? { ...m, time: nowTimestamp(() => new Date(Date.parse(m.time as string))) }
          : m,
      ),
    };
  }
  return out;
}

/** Pruning, defaulting and validation: the CRD schema's work plus the metadata checks. */
export function admit(res: ResolvedResource, obj: KubeObject, old: KubeObject | undefined): void {
  const strategy = strategyOf(res);
  const rt = res.rt;
  // The schema engine works on the request version's shape; storage and view only differ in
  // apiVersion for schema-backed resources.
  strategy?.prune?.(obj);
  strategy?.applyDefaults?.(obj);
  if (res.apiVersion !== rt.storageApiVersion) {
    // Stored in another version: that version's schema prunes it too (conversion: None).
    const storage = rt.versions.find(
      (v) => groupVersion(rt.group, v.version) === rt.storageApiVersion,
    );
    storage?.strategy?.prune?.(obj);
  }
  const causes: InvalidCause[] = validateObjectMeta(
    obj,
    rt.group === "" && rt.plural === "namespaces",
  );
  if (strategy?.validate) causes.push(...strategy.validate(obj, old));
  if (old && rt.validateUpdate) causes.push(...rt.validateUpdate(obj, old));
  if (causes.length > 0) {
    throw invalid(rt.group, rt.kind, obj.metadata.name ?? obj.metadata.generateName ?? "", causes);
  }
}

export function checkNamespaceWritable(store: Store, namespace: string): void {
  const ns = store.get("namespaces", namespace);
  if (!ns) throw notFound("", "namespaces", namespace);
  if (ns.obj.metadata.deletionTimestamp !== undefined) {
    throw new ApiError(
      403,
      "Forbidden",
      `unable to create new content in namespace ${namespace} because it is being terminated`,
      {
        name: namespace,
        kind: "namespaces",
        causes: [
          {
            reason: "NamespaceTerminating",
            message: `namespace ${namespace} is being terminated`,
            field: "metadata.namespace",
          },
        ],
      },
    );
  }
}

export function specChanged(rt: ResourceType, before: KubeObject, after: KubeObject): boolean {
  if (rt.generation === "spec") return !isDeepStrictEqual(before.spec, after.spec);
  const strip = (o: KubeObject) => {
    const { metadata: _m, status, apiVersion: _a, kind: _k, ...rest } = o;
    return rt.statusSubresource ? rest : { ...rest, status };
  };
  return !isDeepStrictEqual(strip(before), strip(after));
}
