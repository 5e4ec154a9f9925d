/**
 * Typed errors of the fake scaling-group cloud. Every failed call rejects with a {@link CloudError}
 * whose `code` says what went wrong (modelled on the AWS Auto Scaling / EC2 error codes real providers
 * branch on) and whose `status` is the HTTP status a real SDK would have seen.
 *
 * @module
 */

/** Every error code the fake cloud returns, with the HTTP status it comes with. */
export const CLOUD_ERROR_STATUS = {
  /** 400: a request field is invalid (desired outside [min, max], unknown zone, bad name, …). */
  ValidationError: 400,
  /** 400: userData is larger than the cloud accepts. */
  UserDataTooLarge: 400,
  /** 400: the launch template already has the maximum number of versions; delete old ones first. */
  VersionLimitExceeded: 400,
  /** 404: the named group, template, version, instance or refresh does not exist. */
  NotFound: 404,
  /** 409: a resource with that name exists already. */
  AlreadyExists: 409,
  /** 409: the resource is still used (group with instances, template version referenced). */
  ResourceInUse: 409,
  /** 409: the group is busy with an activity that must finish first (e.g. it is being deleted). */
  ScalingActivityInProgress: 409,
  /** 409: an instance refresh is already running on this group. */
  InstanceRefreshInProgress: 409,
  /** 404: there is no running instance refresh to cancel. */
  ActiveInstanceRefreshNotFound: 404,
  /** 429: too many requests; wait `retryAfterMs`. */
  Throttling: 429,
  /** 500: an internal error; retrying later usually works. */
  InternalError: 500,
  /** 503: the service is briefly unavailable; retry after `retryAfterMs`. */
  ServiceUnavailable: 503,
} as const;

/** The code of a {@link CloudError}. */
export type CloudErrorCode = keyof typeof CLOUD_ERROR_STATUS;

/**
 * An error returned by the fake cloud.
 *
 * @example
 * ```ts
 * try {
 *   await cloud.client.setDesiredCapacity("pool", 99);
 * } catch (err) {
 *   if (err instanceof CloudError && err.code === "ValidationError") console.log(err.message);
 *   if (err instanceof CloudError && err.code === "Throttling") await sleep(err.retryAfterMs ?? 1000);
 * }
 * ```
 */
export class CloudError extends Error {
  override readonly name = "CloudError";
  /** HTTP status the call failed with. */
  readonly status: number;

  /**
   * @param code - what went wrong
   * @param message - a sentence saying what was wrong and what to do
   * @param retryAfterMs - for `Throttling` and `ServiceUnavailable`: how long to wait before retrying
   */
  constructor(
    readonly code: CloudErrorCode,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(`${code}: ${message}`);
    this.status = CLOUD_ERROR_STATUS[code];
  }

  /** True for errors that go away by retrying the same call later (429 and 5xx). */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** Type guard: is `error` a {@link CloudError}, optionally with one of `codes`. */
export function isCloudError(error: unknown, ...codes: CloudErrorCode[]): error is CloudError {
  return error instanceof CloudError && (codes.length === 0 || codes.includes(error.code));
}
