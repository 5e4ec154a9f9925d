import { isDeepStrictEqual } from "node:util";
import type * as z from "zod";
import { Annotations } from "../contract/constants.js";
import { CONTRACT_SPEC_KEYS, CONTRACT_STATUS_KEYS } from "./contract-fields.js";
import { conversionDataProblem, invalidField } from "./conversion-checks.js";

/**
 * The part of an object a version's schema shapes, which a conversion rewrites: `spec` and `status`
 * of a pool (a template's `spec.template.spec` is handed over as `spec`, without a status). Metadata,
 * `apiVersion` and `kind` are the SDK's to carry.
 */
export interface ConvertibleContent {
  /** The spec, contract fields included. */
  spec: Record<string, unknown>;
  /** The status, contract fields included; absent on a template and on a pool not yet reconciled. */
  status?: Record<string, unknown>;
}

/**
 * The content of an object at a spoke as `SpokeVersion` sees it by default: any spec and status. A
 * conversion may declare its own, narrower type for it (`{ spec: z.output<typeof v1beta1Spec> }`).
 */
export interface SpokeContent {
  /** The spec at the spoke, contract fields included. */
  spec: object;
  /** The status at the spoke, contract fields included. */
  status?: object;
}

/** What a spoke → hub conversion is told besides the spoke's content. */
export interface ToHubContext<Hub> {
  /**
   * The hub content this object had when it was last converted from the hub to this spoke, read back
   * from the `cluster.x-k8s.io/conversion-data` annotation (`undefined` when there is none: the object
   * was written at this version, or the spoke held everything). Copy from it only the fields the spoke
   * cannot hold: the others may have been changed since, through this version. Anyone who may edit the
   * object may edit the annotation too: check what you copy as you would the spec.
   */
  readonly restored: Hub | undefined;
}

/**
 * A served version other than the hub (a "spoke"): its own schemas and the two conversions to and from
 * the hub (storage) version. Both must be pure and synchronous (the API server waits on them) and may
 * throw: throw a {@link ConversionError} to tell the client why, anything else is logged and answered
 * with a generic message. Contract fields (`spec.providerIDList`, `status.conditions`, …) exist at every
 * version: the SDK carries those a conversion leaves unset.
 */
export interface SpokeVersion<Hub = ConvertibleContent, Spoke = SpokeContent> {
  /** The provider's own spec fields at this version (the contract fields are added). */
  readonly spec: z.ZodObject;
  /** The provider's own status fields at this version (the contract fields are added). */
  readonly status?: z.ZodObject;
  /** This version's content as the hub's; `context.restored` holds what the spoke could not. */
  toHub(spoke: Spoke, context: ToHubContext<Hub>): Hub;
  /** The hub's content at this version; what it cannot hold the SDK keeps in the annotation. */
  fromHub(hub: Hub): Spoke;
}

/**
 * A conversion failed for a reason the client may read: thrown by a conversion function (its message
 * goes into the ConversionReview's `result.message`, so it must not carry the object's content), and by
 * the SDK for an object it cannot convert (unknown version or kind, unreadable annotation).
 */
export class ConversionError extends Error {
  override readonly name = "ConversionError";
}

/**
 * A conversion function threw something other than a {@link ConversionError}: its message may quote
 * the object, so the webhook logs `cause` and tells the client only which conversion failed.
 */
export class ConversionFunctionError extends Error {
  override readonly name = "ConversionFunctionError";
}

/** How a kind defined with conversions converts its objects (`definition.conversion`). */
export interface KindConversion {
  /** API group of the kinds. */
  readonly group: string;
  /** The pool kind and its `<Kind>Template`, both converted. */
  readonly kinds: readonly string[];
  /** The hub: the storage version, which every other version converts through. */
  readonly hub: string;
  /** Every served version, hub included. */
  readonly versions: readonly string[];
  /** The provider's own zod schemas per version (contract fields not included). */
  readonly schemas: Readonly<
    Record<string, { readonly spec: z.ZodObject; readonly status: z.ZodObject | undefined }>
  >;
  /**
   * Converts a pool or template object to `toVersion` (through the hub), returning a new object;
   * throws a {@link ConversionError} naming what is wrong, never quoting the object's content.
   */
  convert(object: Readonly<Record<string, unknown>>, toVersion: string): Record<string, unknown>;
}

/** What {@link kindConversion} builds from: the checked input of `defineInfraMachinePool`. */
export interface KindConversionInput {
  /** API group of the kinds. */
  readonly group: string;
  /** The pool kind. */
  readonly kind: string;
  /** `<Kind>Template`. */
  readonly templateKind: string;
  /** The storage version. */
  readonly hub: string;
  /** Every served version, hub included. */
  readonly versions: readonly string[];
  /** The hub's own schemas (`spec`, `status` of the input). */
  readonly hubSchemas: { readonly spec: z.ZodObject; readonly status: z.ZodObject | undefined };
  /** Every other version, with its schemas and conversions. */
  readonly spokes: Readonly<Record<string, SpokeVersion<ConvertibleContent, ConvertibleContent>>>;
}

type JsonObject = Record<string, unknown>;

// A version, kind or name as the API server spells one; anything else is not echoed into a message.
const ECHOABLE = /^[A-Za-z0-9][A-Za-z0-9./-]{0,252}$/;

/** `value` when it is safe to put into a message (a name-like string), else a placeholder. */
export function describeName(value: unknown): string {
  return typeof value === "string" && ECHOABLE.test(value) ? value : "(unreadable)";
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON-equal: what the API server would store for both is the same (undefined fields dropped). */
function sameJson(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(
    JSON.parse(JSON.stringify(a ?? null)),
    JSON.parse(JSON.stringify(b ?? null)),
  );
}

/** Builds a kind's {@link KindConversion}; `defineInfraMachinePool` calls it when given spokes. */
export function kindConversion(input: KindConversionInput): KindConversion {
  const { group, kind, templateKind, hub, versions, spokes } = input;
  const schemas: Record<string, { spec: z.ZodObject; status: z.ZodObject | undefined }> = {
    [hub]: input.hubSchemas,
  };
  for (const [version, spoke] of Object.entries(spokes)) {
    schemas[version] = { spec: spoke.spec, status: spoke.status };
  }

  const describe = (object: Readonly<JsonObject>): string => {
    const metadata = isObject(object.metadata) ? object.metadata : {};
    const name = describeName(metadata.name);
    return typeof metadata.namespace === "string"
      ? `${describeName(object.kind)} ${describeName(metadata.namespace)}/${name}`
      : `${describeName(object.kind)} ${name}`;
  };

  const contentOf = (object: Readonly<JsonObject>, template: boolean): ConvertibleContent => {
    if (!isObject(object.spec))
      throw new ConversionError(`${describe(object)}: spec is not an object`);
    if (template) {
      const inner = object.spec.template;
      const spec = isObject(inner) ? inner.spec : undefined;
      if (!isObject(spec))
        throw new ConversionError(`${describe(object)}: spec.template.spec is not an object`);
      return { spec: structuredClone(spec) };
    }
    if (object.status !== undefined && !isObject(object.status))
      throw new ConversionError(`${describe(object)}: status is not an object`);
    return {
      spec: structuredClone(object.spec),
      ...(isObject(object.status) ? { status: structuredClone(object.status) } : {}),
    };
  };

  const withContent = (
    object: Readonly<JsonObject>,
    content: ConvertibleContent,
    template: boolean,
    version: string,
  ): JsonObject => {
    const result = structuredClone(object) as JsonObject;
    result.apiVersion = `${group}/${version}`;
    const spec = result.spec as JsonObject;
    if (template) {
      (spec.template as JsonObject).spec = content.spec;
    } else {
      result.spec = content.spec;
      if (content.status === undefined) delete result.status;
      else result.status = content.status;
    }
    return result;
  };

  // The SDK owns the contract fields: they are the same at every version, so a conversion that leaves
  // one unset has it carried over rather than lost.
  const carryContractFields = (
    from: ConvertibleContent,
    to: ConvertibleContent,
  ): ConvertibleContent => {
    const spec = { ...to.spec };
    for (const key of CONTRACT_SPEC_KEYS)
      if (from.spec[key] !== undefined && spec[key] === undefined) spec[key] = from.spec[key];
    if (from.status === undefined) return { ...to, spec };
    const status = { ...(to.status ?? {}) };
    for (const key of CONTRACT_STATUS_KEYS)
      if (from.status[key] !== undefined && status[key] === undefined)
        status[key] = from.status[key];
    return { ...to, spec, status };
  };

  const run = (
    object: Readonly<JsonObject>,
    what: string,
    conversion: () => unknown,
  ): ConvertibleContent => {
    let result: unknown;
    try {
      result = conversion();
    } catch (error) {
      if (error instanceof ConversionError)
        throw new ConversionError(`${describe(object)}: ${what}: ${error.message}`);
      // Anything else may quote the object; the webhook logs it and answers without it.
      throw new ConversionFunctionError(`${describe(object)}: ${what} threw`, { cause: error });
    }
    if (!isObject(result) || !isObject(result.spec))
      throw new ConversionError(`${describe(object)}: ${what} returned no { spec } object`);
    if (result.status !== undefined && !isObject(result.status))
      throw new ConversionError(
        `${describe(object)}: ${what} returned a status that is not an object`,
      );
    return result as unknown as ConvertibleContent;
  };

  // What a conversion returns is checked against the schema of the version it is for: the API server
  // validates no conversion output, and a spoke's toHub may copy from a tenant's annotation.
  const checked = (
    object: Readonly<JsonObject>,
    what: string,
    version: string,
    template: boolean,
    content: ConvertibleContent,
  ): ConvertibleContent => {
    const field = invalidField(schemas[version] as (typeof schemas)[string], content, template);
    if (field === undefined) return content;
    throw new ConversionError(
      `${describe(object)}: ${what} gave ${field}, which the ${version} schema refuses; correct the object (or remove its ${Annotations.ConversionData} annotation, whose content the conversion may have copied)`,
    );
  };

  const spokeOf = (version: string) =>
    spokes[version] as SpokeVersion<ConvertibleContent, ConvertibleContent>;

  const dropConversionData = (object: JsonObject): void => {
    const metadata = object.metadata;
    if (!isObject(metadata) || !isObject(metadata.annotations)) return;
    delete metadata.annotations[Annotations.ConversionData];
    if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
  };

  const toHub = (object: Readonly<JsonObject>, from: string, template: boolean): JsonObject => {
    const content = contentOf(object, template);
    const metadata = isObject(object.metadata) ? object.metadata : {};
    const annotations = isObject(metadata.annotations) ? metadata.annotations : {};
    const data = annotations[Annotations.ConversionData];
    let restored: ConvertibleContent | undefined;
    if (data !== undefined) {
      const problem =
        typeof data === "string"
          ? conversionDataProblem(Annotations.ConversionData, data)
          : undefined;
      if (problem) throw new ConversionError(`${describe(object)}: ${problem}`);
      try {
        restored = typeof data === "string" ? (JSON.parse(data) as ConvertibleContent) : undefined;
      } catch {
        restored = undefined;
      }
      if (!isObject(restored) || !isObject(restored.spec))
        throw new ConversionError(
          `${describe(object)}: the ${Annotations.ConversionData} annotation is not the JSON of a { spec } object; remove it or restore it`,
        );
    }
    const spoke = spokeOf(from);
    const what = `converting ${from} to ${hub}`;
    const hubContent = checked(
      object,
      what,
      hub,
      template,
      carryContractFields(
        content,
        run(object, what, () => spoke.toHub(content, { restored })),
      ),
    );
    const result = withContent(object, hubContent, template, hub);
    dropConversionData(result);
    return result;
  };

  const fromHub = (object: Readonly<JsonObject>, to: string, template: boolean): JsonObject => {
    const hubObject = structuredClone(object) as JsonObject;
    dropConversionData(hubObject);
    const content = contentOf(hubObject, template);
    const spoke = spokeOf(to);
    const what = `converting ${hub} to ${to}`;
    const spokeContent = checked(
      hubObject,
      what,
      to,
      template,
      carryContractFields(
        content,
        run(hubObject, what, () => spoke.fromHub(structuredClone(content))),
      ),
    );
    const result = withContent(hubObject, spokeContent, template, to);
    // Keep the hub's content only when the spoke lost some of it (CAPI keeps it always): an object the
    // spoke holds whole reads without the annotation.
    const back = carryContractFields(
      spokeContent,
      run(hubObject, `converting ${to} back to ${hub}`, () =>
        spoke.toHub(structuredClone(spokeContent), { restored: undefined }),
      ),
    );
    if (!sameJson(back, content)) {
      const metadata = (isObject(result.metadata) ? result.metadata : {}) as JsonObject;
      metadata.annotations = {
        ...(isObject(metadata.annotations) ? metadata.annotations : {}),
        [Annotations.ConversionData]: JSON.stringify(content),
      };
      result.metadata = metadata;
    }
    return result;
  };

  return {
    group,
    kinds: [kind, templateKind],
    hub,
    versions: [...versions],
    schemas,
    convert(object, toVersion) {
      if (!isObject(object)) throw new ConversionError("the object is not a JSON object");
      if (!versions.includes(toVersion))
        throw new ConversionError(
          `${describeName(toVersion)} is not a served version of ${group} (${versions.join(", ")})`,
        );
      if (object.kind !== kind && object.kind !== templateKind)
        throw new ConversionError(
          `${describe(object)}: the kind is not one of ${kind}, ${templateKind} of ${group}`,
        );
      const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
      const slash = apiVersion.lastIndexOf("/");
      const from = apiVersion.slice(slash + 1);
      if (slash < 0 || apiVersion.slice(0, slash) !== group || !versions.includes(from))
        throw new ConversionError(
          `${describe(object)}: apiVersion ${describeName(apiVersion)} is not a served version of ${group} (${versions.join(", ")})`,
        );
      const template = object.kind === templateKind;
      if (from === toVersion) return structuredClone(object) as JsonObject;
      const atHub =
        from === hub ? (structuredClone(object) as JsonObject) : toHub(object, from, template);
      return toVersion === hub ? atHub : fromHub(atHub, toVersion, template);
    },
  };
}
