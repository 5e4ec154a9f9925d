import { isDeepStrictEqual } from "node:util";
import type * as z from "zod";
import { Annotations } from "../contract/constants.js";
import type { InfraMachinePoolDefinition } from "../crd/definition.js";
import { jsonPatchDiff } from "./patch.js";
import type {
  AdmissionHandler,
  AdmissionRequest,
  AdmissionResult,
  GroupVersionKind,
} from "./types.js";

/** What a defaulter or validator is told besides the spec. */
export interface SpecAdmissionContext<Spec> {
  /** CREATE or UPDATE. */
  readonly operation: "CREATE" | "UPDATE";
  /** The spec before an UPDATE. */
  readonly oldSpec?: Spec;
  /** `true` for the `<Kind>Template` kind (the spec is `spec.template.spec`). */
  readonly template: boolean;
  /** The raw admission request. */
  readonly request: AdmissionRequest;
}

/**
 * Fills defaults into a spec, in place. For a template it gets `spec.template.spec`, so one defaulter
 * serves both kinds.
 */
export type SpecDefaulter<Spec> = (
  spec: Spec,
  context: SpecAdmissionContext<Spec>,
) => void | Promise<void>;

/**
 * Checks a spec beyond what the CRD schema can say (cross-field rules, cloud limits). Returns one
 * message per problem, each starting with the field path (`spec.maxSize: must be ≥ spec.minSize`);
 * nothing or `[]` admits. For a template it gets `spec.template.spec` (paths are rewritten).
 */
export type SpecValidator<Spec> = (
  spec: Spec,
  context: SpecAdmissionContext<Spec>,
) => readonly string[] | undefined | Promise<readonly string[] | undefined>;

/** Options of {@link infraMachinePoolWebhooks}. */
export interface InfraMachinePoolWebhookOptions<Spec> {
  /** Defaults for the pool's spec and the template's `spec.template.spec`. */
  default?: SpecDefaulter<Spec>;
  /** Validation of the pool's spec and the template's `spec.template.spec`. */
  validate?: SpecValidator<Spec>;
}

/**
 * The conventional webhook path (kubebuilder's): `/<mutate|validate>-<group with dashes>-<version>-<kind lower-case>`.
 *
 * @example
 * ```ts
 * webhookPath("validate", "infrastructure.foo.com", "v1beta2", "FooMachinePool");
 * // "/validate-infrastructure-foo-com-v1beta2-foomachinepool"
 * ```
 */
export function webhookPath(
  type: "mutate" | "validate",
  group: string,
  version: string,
  kind: string,
): string {
  return `/${type}-${group.replaceAll(".", "-")}-${version}-${kind.toLowerCase()}`;
}

/**
 * `handler`, shown only reviews of `kinds`: the {@link WebhookServer} denies a review of any other kind
 * (a Secret sent to a pool's path by a webhook configuration with the wrong rules, say) with a 400
 * naming the kind it serves, before `handler` runs. The kinds match `request.kind` exactly: with
 * `matchPolicy: Equivalent` the API server converts a review to the version the rules name.
 *
 * @example
 * ```ts
 * server.register("/validate-foo", forKinds(
 *   [{ group: "infrastructure.foo.com", version: "v1beta2", kind: "FooMachinePool" }],
 *   validatingWebhook(checkFoo),
 * ));
 * ```
 */
export function forKinds(
  kinds: readonly GroupVersionKind[],
  handler: AdmissionHandler,
): AdmissionHandler {
  if (kinds.length === 0) {
    throw new TypeError(
      "forKinds: name at least one kind (group, version, kind) the handler judges",
    );
  }
  const judge: AdmissionHandler = (request) => handler(request);
  return Object.assign(judge, {
    kinds: Object.freeze(kinds.map(({ group, version, kind }) => ({ group, version, kind }))),
  });
}

// An object name as the API server allows one (a DNS subdomain at most), or empty (generateName).
const OBJECT_NAME = /^[a-z0-9.-]{0,253}$/;

/** Admits the request. */
export function allowed(warnings?: string[]): AdmissionResult {
  return warnings?.length ? { allowed: true, warnings } : { allowed: true };
}

/**
 * Denies the request as the API server denies an invalid object (422, reason `Invalid`), listing every
 * problem: `FooMachinePool "pool-a" is invalid: [spec.maxSize: …, spec.zones: …]`.
 */
export function denied(request: AdmissionRequest, problems: readonly string[]): AdmissionResult {
  const given =
    request.name || String((request.object?.metadata as { name?: string } | undefined)?.name ?? "");
  // The API server sends object names; anyone else who reaches the port may send anything.
  const name = OBJECT_NAME.test(given) ? given : "(a name that is not an object name)";
  const list = problems.length === 1 ? problems[0] : `[${problems.join(", ")}]`;
  return {
    allowed: false,
    status: {
      code: 422,
      reason: "Invalid",
      message: `${request.kind.kind} "${name}" is invalid: ${list}`,
    },
  };
}

/**
 * A mutating handler: runs `mutate` on a copy of the object and answers the JSON patch of what it
 * changed (nothing changed: a plain allow).
 *
 * @example
 * ```ts
 * server.register("/mutate-foo", defaultingWebhook((object) => { object.spec.size ??= 1; }));
 * ```
 */
export function defaultingWebhook<T extends Record<string, unknown>>(
  mutate: (object: T, request: AdmissionRequest) => void | Promise<void>,
): AdmissionHandler {
  return async (request) => {
    if (!request.object || (request.operation !== "CREATE" && request.operation !== "UPDATE")) {
      return allowed();
    }
    const copy = structuredClone(request.object) as T;
    await mutate(copy, request);
    const ops = jsonPatchDiff(request.object, copy);
    if (ops.length === 0) return allowed();
    return {
      allowed: true,
      patchType: "JSONPatch",
      patch: Buffer.from(JSON.stringify(ops)).toString("base64"),
    };
  };
}

/**
 * A validating handler: `validate` returns the problems of the request (field path first); none admits.
 *
 * @example
 * ```ts
 * server.register("/validate-foo", validatingWebhook((request) =>
 *   request.operation === "DELETE" ? [] : checkFoo(request.object)));
 * ```
 */
export function validatingWebhook(
  validate: (
    request: AdmissionRequest,
  ) => readonly string[] | undefined | Promise<readonly string[] | undefined>,
): AdmissionHandler {
  return async (request) => {
    const problems = (await validate(request)) ?? [];
    return problems.length === 0 ? allowed() : denied(request, problems);
  };
}

// A spec that is not an object is left to the CRD's schema: the API server refuses it after the
// mutating webhooks, before the validating ones. Defaulters and validators only ever see objects.
function specOf(object: unknown, template: boolean): unknown {
  const spec = plainObject(plainObject(object)?.spec);
  return template ? plainObject(plainObject(spec?.template)?.spec) : spec;
}

/** `spec.template.spec` whatever it holds, for the immutability rule. */
function templateSpecOf(object: unknown): unknown {
  return plainObject(plainObject(plainObject(object)?.spec)?.template)?.spec;
}

function plainObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * Whether immutability checks are skipped for this request (contract R19): a dry run of an object
 * carrying `topology.cluster.x-k8s.io/dry-run`, as the topology controller sends when it server-side
 * applies a template to compute a diff.
 */
export function isTopologyDryRun(request: AdmissionRequest): boolean {
  const annotations = plainObject(plainObject(plainObject(request.object)?.metadata)?.annotations);
  return (
    request.dryRun === true &&
    annotations !== undefined &&
    Object.hasOwn(annotations, Annotations.TopologyDryRun)
  );
}

/**
 * The webhooks of a kind defined with `defineInfraMachinePool`, path → handler, for
 * {@link WebhookServer.register}:
 *
 * - `/mutate-…-<kind>` and `/mutate-…-<kind>template`: `options.default` on the pool's spec and the
 *   template's `spec.template.spec` (only when given);
 * - `/validate-…-<kind>`: `options.validate` on create and update;
 * - `/validate-…-<kind>template`: `options.validate` on `spec.template.spec`, and the template rule of
 *   CAPI providers: `spec.template.spec` is immutable (create a new template and point the
 *   MachinePool at it) — except for a topology dry run (R19, {@link isTopologyDryRun}).
 *
 * The paths and rules match what `renderComponents` writes into the webhook configurations. Each handler
 * judges only its own kind at the storage version ({@link forKinds}): a review of another kind is denied.
 *
 * @example
 * ```ts
 * server.register(infraMachinePoolWebhooks(FooMachinePool, {
 *   validate: (spec) => (spec.minSize > spec.maxSize ? ["spec.minSize: must not exceed spec.maxSize"] : []),
 * }));
 * ```
 */
export function infraMachinePoolWebhooks<Spec extends z.ZodObject, Status extends z.ZodObject>(
  definition: InfraMachinePoolDefinition<Spec, Status>,
  options: InfraMachinePoolWebhookOptions<z.output<Spec>> = {},
): Record<string, AdmissionHandler> {
  type S = z.output<Spec>;
  const { group, storageVersion: version } = definition;
  const handlers: Record<string, AdmissionHandler> = {};
  const contextOf = (request: AdmissionRequest, template: boolean): SpecAdmissionContext<S> => {
    const oldSpec = specOf(request.oldObject, template) as S | undefined;
    return {
      operation: request.operation as "CREATE" | "UPDATE",
      template,
      request,
      ...(oldSpec !== undefined ? { oldSpec } : {}),
    };
  };
  const validateSpec = async (request: AdmissionRequest, template: boolean): Promise<string[]> => {
    const spec = specOf(request.object, template);
    if (!options.validate || spec === undefined) return [];
    const problems = (await options.validate(spec as S, contextOf(request, template))) ?? [];
    // The validator speaks of the pool's spec; on a template the same fields sit under spec.template.
    return template
      ? problems.map((problem) => problem.replace(/^spec\./, "spec.template.spec."))
      : [...problems];
  };
  for (const [kind, template] of [
    [definition.kind, false],
    [definition.templateKind, true],
  ] as const) {
    const own = [{ group, version, kind }];
    const defaulter = options.default;
    if (defaulter) {
      handlers[webhookPath("mutate", group, version, kind)] = forKinds(
        own,
        defaultingWebhook(async (object, request) => {
          const spec = specOf(object, template);
          if (spec !== undefined) await defaulter(spec as S, contextOf(request, template));
        }),
      );
    }
    handlers[webhookPath("validate", group, version, kind)] = forKinds(
      own,
      validatingWebhook(async (request) => {
        if (request.operation !== "CREATE" && request.operation !== "UPDATE") return [];
        const problems = await validateSpec(request, template);
        if (
          template &&
          request.operation === "UPDATE" &&
          !isTopologyDryRun(request) &&
          !isDeepStrictEqual(templateSpecOf(request.object), templateSpecOf(request.oldObject))
        ) {
          problems.push(
            `spec.template.spec: Invalid value: ${kind} spec.template.spec field is immutable. Please create a new resource instead.`,
          );
        }
        return problems;
      }),
    );
  }
  return handlers;
}
