import {
  ConversionError,
  ConversionFunctionError,
  describeName,
  type KindConversion,
} from "../crd/conversion.js";
import type { RuntimeLogger } from "../runtime/logging.js";

/** The path the conversion webhook is served at and CRDs point at (kubebuilder's). */
export const CONVERSION_WEBHOOK_PATH = "/convert";

/** What the API server asks a conversion webhook (`apiextensions.k8s.io/v1` `ConversionRequest`). */
export interface ConversionRequest {
  /** Identifies this call; echoed in the response. */
  uid: string;
  /** The `group/version` to convert every object to. */
  desiredAPIVersion: string;
  /** The objects to convert, each at a served version of the CRD. */
  objects: unknown[];
}

/** A conversion webhook's answer (`apiextensions.k8s.io/v1` `ConversionResponse`). */
export interface ConversionResponse {
  /** The `request.uid` this answers. */
  uid: string;
  /** `Success`, or `Failure` with a message saying why (the client sees it). */
  result: { status: "Success" | "Failure"; message?: string };
  /** The converted objects, in request order (empty on failure). */
  convertedObjects: Array<Record<string, unknown>>;
}

/** A conversion answer before the server adds the uid. */
export type ConversionResult = Omit<ConversionResponse, "uid">;

/**
 * Serves a conversion webhook path: turns a ConversionReview's request into converted objects. The
 * `conversion` mark tells the {@link WebhookServer} to speak ConversionReview on its path, not
 * AdmissionReview. Build one with {@link conversionWebhook}.
 */
export type ConversionHandler = ((
  request: ConversionRequest,
  logger?: RuntimeLogger,
) => ConversionResult | Promise<ConversionResult>) & {
  /** Marks a ConversionReview handler. */
  readonly conversion: true;
};

/** Whether `handler` answers ConversionReviews. */
export function isConversionHandler(handler: unknown): handler is ConversionHandler {
  return typeof handler === "function" && (handler as { conversion?: unknown }).conversion === true;
}

/** A failed conversion: no objects, and a message for the client. */
export function conversionFailure(message: string): ConversionResult {
  return { result: { status: "Failure", message }, convertedObjects: [] };
}

/** What {@link conversionWebhook} needs of a defined kind. */
export interface ConvertibleKind {
  /** API group of the kind. */
  readonly group: string;
  /** The pool kind. */
  readonly kind: string;
  /** The kind's conversions (`undefined` for a kind with one schema: it needs no webhook). */
  readonly conversion: KindConversion | undefined;
}

/**
 * The conversion webhook of kinds defined with `spokes` (`defineInfraMachinePool`), for
 * {@link WebhookServer.register} at {@link CONVERSION_WEBHOOK_PATH}, where the CRDs `renderComponents`
 * writes point. It converts each object of a review to `desiredAPIVersion` through the hub. A review
 * it cannot answer (malformed, an unknown group, kind or version, a conversion that throws) is answered
 * `result.status: Failure` with a message naming the object and what went wrong, never its content;
 * the error a conversion threw is logged. Kinds without `spokes` are accepted and left out (their CRDs
 * call no webhook).
 *
 * @example
 * ```ts
 * server.register(CONVERSION_WEBHOOK_PATH, conversionWebhook([FooMachinePool]));
 * ```
 */
export function conversionWebhook(kinds: readonly ConvertibleKind[]): ConversionHandler {
  const byGroupKind = new Map<string, KindConversion>();
  for (const kind of kinds) {
    // A kind with one schema needs no conversion (its CRD names no webhook): serving /convert anyway
    // lets a provider register it once and add a version later without touching its main.
    const conversion = kind.conversion;
    if (!conversion) continue;
    for (const name of conversion.kinds) byGroupKind.set(`${conversion.group}/${name}`, conversion);
  }
  const handler = (request: ConversionRequest, logger?: RuntimeLogger): ConversionResult => {
    const desired = request.desiredAPIVersion;
    if (typeof desired !== "string" || !Array.isArray(request.objects)) {
      return conversionFailure(
        "the review's request needs a desiredAPIVersion string and an objects list",
      );
    }
    const slash = desired.lastIndexOf("/");
    const group = desired.slice(0, slash);
    const version = desired.slice(slash + 1);
    const converted: Array<Record<string, unknown>> = [];
    for (const [index, object] of request.objects.entries()) {
      const kind =
        typeof object === "object" && object !== null
          ? (object as { kind?: unknown }).kind
          : undefined;
      const conversion = byGroupKind.get(`${group}/${String(kind)}`);
      if (slash < 0 || !conversion) {
        return conversionFailure(
          `objects[${index}]: this webhook does not convert ${describeName(kind)} to ${describeName(desired)}`,
        );
      }
      try {
        converted.push(conversion.convert(object as Record<string, unknown>, version));
      } catch (error) {
        if (error instanceof ConversionError) {
          return conversionFailure(`objects[${index}]: ${error.message}`);
        }
        const message =
          error instanceof ConversionFunctionError
            ? `${error.message} (the provider's log has the error)`
            : "the conversion failed (the provider's log has the error)";
        logger?.error(
          { err: error instanceof ConversionFunctionError ? error.cause : error, index },
          "conversion failed",
        );
        return conversionFailure(`objects[${index}]: ${message}`);
      }
    }
    return { result: { status: "Success" }, convertedObjects: converted };
  };
  return Object.assign(handler, { conversion: true as const });
}
