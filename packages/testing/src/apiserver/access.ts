import { badRequest } from "./errors.js";

/** A user a token stands for. */
export interface AccessUser {
  /** User name, e.g. `system:serviceaccount:monitoring:prometheus`. */
  username: string;
  /** The user's UID as TokenReview reports it in `status.user.uid`; left out when unset. */
  uid?: string;
  /**
   * Groups the token's user belongs to, e.g. `system:serviceaccounts`; SubjectAccessReview grants
   * can match on them.
   */
  groups?: string[];
}

/** A permission on non-resource URLs, as an RBAC rule with `nonResourceURLs`. */
export interface NonResourceGrant {
  /** The user name it applies to (or use `group`). */
  user?: string;
  /** The group it applies to. */
  group?: string;
  /** Verbs (`get`, `*`). */
  verbs: string[];
  /** Paths; a trailing `*` matches a prefix, as RBAC. */
  nonResourceURLs: string[];
}

/**
 * What the in-memory server answers to `TokenReview` and `SubjectAccessReview` (create-only kinds of
 * `authentication.k8s.io/v1` and `authorization.k8s.io/v1`): tokens registered with
 * {@link AccessReviews.addToken} authenticate, anything else does not; a non-resource request is
 * allowed when a {@link NonResourceGrant} matches, a resource request never. The server itself still
 * accepts every caller; this only serves components that delegate authentication to it (a secured
 * metrics endpoint).
 *
 * @example
 * ```ts
 * api.access.addToken("scraper-token", { username: "system:serviceaccount:monitoring:prometheus" });
 * api.access.grant({ user: "system:serviceaccount:monitoring:prometheus", verbs: ["get"], nonResourceURLs: ["/metrics"] });
 * ```
 */
export class AccessReviews {
  private readonly tokens = new Map<string, AccessUser>();
  private readonly grants: NonResourceGrant[] = [];

  /** Makes `token` authenticate as `user`. */
  addToken(token: string, user: AccessUser): void {
    this.tokens.set(token, user);
  }

  /** Allows a user or group verbs on non-resource URLs. */
  grant(grant: NonResourceGrant): void {
    if (!grant.user && !grant.group) throw new TypeError("a grant needs a user or a group");
    this.grants.push(grant);
  }

  /** Forgets every token and grant. */
  clear(): void {
    this.tokens.clear();
    this.grants.length = 0;
  }

  /** Answers a TokenReview body (status filled in). */
  tokenReview(body: unknown): Record<string, unknown> {
    const review = body as { spec?: { token?: unknown } } | undefined;
    const token = review?.spec?.token;
    if (typeof token !== "string" || token === "") {
      throw badRequest("TokenReview: spec.token is required");
    }
    const user = this.tokens.get(token);
    return {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      metadata: {},
      spec: { token },
      status: user
        ? { authenticated: true, user: { groups: ["system:authenticated"], ...user } }
        : { error: "invalid bearer token" },
    };
  }

  /** Answers a SubjectAccessReview body (status filled in). */
  subjectAccessReview(body: unknown): Record<string, unknown> {
    const review = body as
      | {
          spec?: {
            user?: string;
            groups?: string[];
            nonResourceAttributes?: { path?: string; verb?: string };
            resourceAttributes?: unknown;
          };
        }
      | undefined;
    const spec = review?.spec;
    if (!spec || (!spec.nonResourceAttributes && !spec.resourceAttributes)) {
      throw badRequest(
        "SubjectAccessReview: spec.resourceAttributes or spec.nonResourceAttributes is required",
      );
    }
    const attributes = spec.nonResourceAttributes;
    const allowed =
      attributes !== undefined &&
      this.grants.some(
        (grant) =>
          (grant.user === spec.user || (grant.group && spec.groups?.includes(grant.group))) &&
          grant.verbs.some((verb) => verb === "*" || verb === attributes.verb) &&
          grant.nonResourceURLs.some((url) =>
            url.endsWith("*")
              ? (attributes.path ?? "").startsWith(url.slice(0, -1))
              : url === attributes.path,
          ),
      );
    return {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec,
      status: allowed ? { allowed: true } : { allowed: false },
    };
  }
}
