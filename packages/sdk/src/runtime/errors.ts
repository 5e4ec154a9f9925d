/** A cause inside a Kubernetes `Status` (for example one invalid field of a 422 response). */
export interface StatusCause {
  /** Machine-readable cause, e.g. `FieldValueInvalid`. */
  reason?: string;
  /** Human-readable explanation. */
  message?: string;
  /** The field at fault, e.g. `spec.replicas`. */
  field?: string;
}

/** The `metav1.Status` object the API server returns on failures, as parsed from the response. */
export interface ApiStatus {
  /** Always `Status` when the server sent one. */
  kind?: string;
  /** `Success` or `Failure`. */
  status?: string;
  /** Human-readable description. */
  message?: string;
  /** Machine-readable reason: `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Expired`, … */
  reason?: string;
  /** HTTP status code the server meant. */
  code?: number;
  /** Extra details: the object, its causes, and `retryAfterSeconds`. */
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
}

/** What went wrong, where: included in every {@link ApiError}. */
export interface RequestInfo {
  /** The request's HTTP method, e.g. `PATCH`, for the error message. */
  method: string;
  /** Request path, e.g. `/api/v1/namespaces/default/secrets/x`. */
  path: string;
}

/**
 * Base class of every error a Kubernetes request raises. `status` is the parsed `Status` (synthesized
 * from the HTTP response when the server sent none), `code` the HTTP status.
 *
 * @example
 * ```ts
 * try { await client.get(SecretResource, { namespace: "default", name: "x" }); }
 * catch (error) { if (error instanceof NotFoundError) { … } else throw error; }
 * ```
 */
export class ApiError extends Error {
  /** HTTP status code (0 when no response arrived). */
  readonly code: number;
  /** The `Status` the API server answered with: reason, message, and details such as causes. */
  readonly status: ApiStatus;
  /** Method and path of the failed request. */
  readonly request: RequestInfo;

  /** Wraps a failed response. Prefer {@link errorFromStatus}, which picks the right subclass. */
  constructor(code: number, status: ApiStatus, request: RequestInfo, options?: ErrorOptions) {
    super(
      `${request.method} ${request.path}: ${code} ${status.reason ?? "Error"}: ${status.message ?? "no message"}`,
      options,
    );
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.request = request;
  }

  /** The `Status.reason`, e.g. `NotFound`. */
  get reason(): string | undefined {
    return this.status.reason;
  }
}

/** 404: the object (or its namespace, or the resource type) does not exist. */
export class NotFoundError extends ApiError {}
/** 409 with reason `Conflict`: the object changed since it was read (stale `resourceVersion`). */
export class ConflictError extends ApiError {}
/** 409 with reason `AlreadyExists`: a create hit an existing name. */
export class AlreadyExistsError extends ApiError {}
/** 410: the requested `resourceVersion` is too old (watch window expired). */
export class GoneError extends ApiError {}
/** 401: the credentials were refused. */
export class UnauthorizedError extends ApiError {}
/** 403: RBAC does not allow this request. */
export class ForbiddenError extends ApiError {}
/** 400: the request itself was malformed. */
export class BadRequestError extends ApiError {}
/** 5xx other than a timeout: the server failed; retrying later may help. */
export class ServerError extends ApiError {}

/** 422: validation failed. {@link InvalidError.causes} lists each invalid field. */
export class InvalidError extends ApiError {
  /** The field-level causes the server reported. */
  get causes(): StatusCause[] {
    return this.status.details?.causes ?? [];
  }
}

/** 429: throttled. Wait {@link TooManyRequestsError.retryAfterSeconds} before retrying. */
export class TooManyRequestsError extends ApiError {
  /** Seconds the server asked to wait (from `Retry-After` or the Status details), if it said. */
  readonly retryAfterSeconds: number | undefined;

  /** Wraps a 429 response. */
  constructor(
    code: number,
    status: ApiStatus,
    request: RequestInfo,
    retryAfterSeconds?: number,
    options?: ErrorOptions,
  ) {
    super(code, status, request, options);
    this.retryAfterSeconds = retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }
}

/** 504, or reason `Timeout`/`ServerTimeout`, or the client's own request timeout. */
export class TimeoutError extends ApiError {}

/** No HTTP response at all: connection refused or reset, DNS failure, TLS failure. */
export class ConnectionError extends ApiError {}

/**
 * The kubeconfig's CA, client certificate or key is not usable PEM (or the key does not match the
 * certificate): nothing was sent. The message names the fields to fix and OpenSSL's reason, never the
 * material itself. Retrying does not help; a new kubeconfig does.
 */
export class TlsMaterialError extends Error {
  override readonly name = "TlsMaterialError";
}

/**
 * The response was larger than the client accepts (`maxResponseBytes`, or `maxWatchEventBytes` for one
 * watch event): it was refused by its `Content-Length` or cut once it passed the cap.
 */
export class ResponseTooLargeError extends ApiError {}

/**
 * Builds the error class that matches an HTTP failure. The reason decides first (a 409 can be
 * `AlreadyExists` or `Conflict`), then the code.
 *
 * @example
 * ```ts
 * const error = errorFromStatus(404, { reason: "NotFound", message: "x not found" }, { method: "GET", path: "/api/v1/…" });
 * error instanceof NotFoundError; // true
 * ```
 */
export function errorFromStatus(
  code: number,
  status: ApiStatus,
  request: RequestInfo,
  retryAfterSeconds?: number,
): ApiError {
  const reason = status.reason;
  if (reason === "AlreadyExists") return new AlreadyExistsError(code, status, request);
  if (reason === "Conflict") return new ConflictError(code, status, request);
  if (reason === "Invalid" || code === 422) return new InvalidError(code, status, request);
  if (reason === "Expired" || reason === "Gone" || code === 410)
    return new GoneError(code, status, request);
  if (reason === "Timeout" || reason === "ServerTimeout" || code === 504)
    return new TimeoutError(code, status, request);
  switch (code) {
    case 400:
      return new BadRequestError(code, status, request);
    case 401:
      return new UnauthorizedError(code, status, request);
    case 403:
      return new ForbiddenError(code, status, request);
    case 404:
      return new NotFoundError(code, status, request);
    case 409:
      return new ConflictError(code, status, request);
    case 429:
      return new TooManyRequestsError(code, status, request, retryAfterSeconds);
  }
  if (code >= 500) return new ServerError(code, status, request);
  return new ApiError(code, status, request);
}

/** True if `error` is a {@link NotFoundError}: handy for "ignore not found" paths. */
export function isNotFound(error: unknown): error is NotFoundError {
  return error instanceof NotFoundError;
}

/** True if `error` is a {@link ConflictError} (stale write; re-read and retry). */
export function isConflict(error: unknown): error is ConflictError {
  return error instanceof ConflictError;
}

/** True if `error` is an {@link AlreadyExistsError}. */
export function isAlreadyExists(error: unknown): error is AlreadyExistsError {
  return error instanceof AlreadyExistsError;
}

/**
 * Thrown from a reconcile to say "retrying will not help": the key is not requeued, the error is logged,
 * counted in `controller_runtime_terminal_reconcile_errors_total` and its backoff reset. A later change
 * to the object triggers a fresh reconcile as usual.
 *
 * @example
 * ```ts
 * if (!spec.region) throw new TerminalError("spec.region is required; set it and the pool will reconcile");
 * ```
 */
export class TerminalError extends Error {
  /** Creates a terminal error; pass `{ cause }` to keep the original error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/** Raised inside a reconcile whose `reconcileTimeoutMs` elapsed; the key is retried with backoff. */
export class ReconcileTimeoutError extends Error {
  /** Creates the error for a reconcile that ran longer than `timeoutMs`. */
  constructor(key: string, timeoutMs: number) {
    super(`reconcile of ${key} did not finish within ${timeoutMs} ms`);
    this.name = "ReconcileTimeoutError";
  }
}

/**
 * Why a reconcile may no longer act on the world: this process lost its leadership (or can no longer
 * prove it holds it), the graceful shutdown deadline passed, or the reconcile timed out. Raised by
 * `ReconcileContext.fence()` before a side effect; a reconcile that sees it must stop at once, without
 * another cloud call or Kubernetes write. The key is not retried by this process.
 *
 * @example
 * ```ts
 * context.fence();                      // throws FencedError once this process may not act
 * await cloud.terminate(id, { signal: context.signal });
 * ```
 */
export class FencedError extends Error {
  /** Creates the error; `why` says what fenced the reconcile. */
  constructor(why: string, options?: ErrorOptions) {
    super(`stopped before a side effect: ${why}`, options);
    this.name = "FencedError";
  }
}

/** `Manager.start()` rejects with this when leadership was lost (client-go's "leader election lost"). */
export class LeaderElectionLostError extends Error {
  /** Creates the error. */
  constructor(detail = "the lease could not be renewed before the renew deadline") {
    super(`leader election lost: ${detail}; every reconcile was stopped`);
    this.name = "LeaderElectionLostError";
  }
}
