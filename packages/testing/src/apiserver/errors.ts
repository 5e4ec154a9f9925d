/** A Kubernetes `Status` object, the body of every error response. */
export interface StatusBody {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, unknown>;
  status: "Failure" | "Success";
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** `Status.details`, as the real server fills it. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
  retryAfterSeconds?: number;
}

/** Thrown inside the server; the router turns it into a `Status` response. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: StatusDetails | undefined;
  readonly headers: Record<string, string>;
  /** Answer with the Go mux's plain-text `404 page not found` instead of a Status (unserved paths). */
  plainText = false;

  constructor(
    code: number,
    reason: string,
    message: string,
    details?: StatusDetails,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.headers = headers;
  }

  toStatus(): StatusBody {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

/** Builds a failure `Status`. */
export function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
): StatusBody {
  const hasDetails = details !== undefined && Object.keys(details).length > 0;
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(hasDetails ? { details } : {}),
    code,
  };
}

/** Names a resource the way the server's messages do: `configmaps` or `clusters.cluster.x-k8s.io`. */
export function qualifiedResource(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

export function notFound(group: string, plural: string, name: string): ApiError {
  return new ApiError(404, "NotFound", `${qualifiedResource(group, plural)} "${name}" not found`, {
    name,
    group: group || undefined,
    kind: plural,
  });
}

export function alreadyExists(group: string, plural: string, name: string): ApiError {
  return new ApiError(
    409,
    "AlreadyExists",
    `${qualifiedResource(group, plural)} "${name}" already exists`,
    { name, group: group || undefined, kind: plural },
  );
}

export function conflict(group: string, plural: string, name: string, why: string): ApiError {
  return new ApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(group, plural)} "${name}": ${why}`,
    { name, group: group || undefined, kind: plural },
  );
}

export const STALE_OBJECT =
  "the object has been modified; please apply your changes to the latest version and try again";

/** One entry of `Status.details.causes` for a 422 Invalid. */
export interface InvalidCause {
  field: string;
  reason: string;
  message: string;
}

/**
 * 422 Invalid, message formatted as the real server does:
 * `Kind "name" is invalid: field: message` or `... is invalid: [a: m1, b: m2]`.
 */
export function invalid(
  group: string,
  kind: string,
  name: string,
  causes: InvalidCause[],
): ApiError {
  const parts = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const joined = parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  return new ApiError(422, "Invalid", `${qualifiedKind} "${name}" is invalid: ${joined}`, {
    name,
    group: group || undefined,
    kind,
    causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
  });
}

/** A `FieldValueRequired` cause. */
export function requiredCause(field: string, detail?: string): InvalidCause {
  return {
    field,
    reason: "FieldValueRequired",
    message: detail ? `Required value: ${detail}` : "Required value",
  };
}

/** A `FieldValueInvalid` cause; the message quotes the value as the real server does. */
export function invalidValueCause(field: string, value: unknown, detail: string): InvalidCause {
  return {
    field,
    reason: "FieldValueInvalid",
    message: `Invalid value: ${formatValue(value)}: ${detail}`,
  };
}

function formatValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || value === undefined) return "null";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, "BadRequest", message);
}

export function methodNotSupported(): ApiError {
  return new ApiError(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
  );
}

/** 415, worded as kube-apiserver words it (the offending type is not named). */
export function unsupportedMediaType(_contentType: string, accepted: string[]): ApiError {
  return new ApiError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
  );
}

export function pageNotFound(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource", {});
}

/** What kube-apiserver answers for a group/version it does not serve: plain text, not a Status. */
export function unservedPath(): ApiError {
  const e = new ApiError(404, "NotFound", "404 page not found");
  e.plainText = true;
  return e;
}

export function expired(message: string): ApiError {
  return new ApiError(410, "Expired", message);
}

/** The reason the real server uses for a bare status code (for injected faults). */
export function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "InternalError";
  }
}
