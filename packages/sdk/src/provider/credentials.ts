/**
 * Per-pool cloud credentials: the controller's `credentials` hook, what it may read, and the cache
 * that keeps what it resolved until something it read changes. Multi-tenancy as CAPI's contract
 * defines it: each pool's credentials come from its own Cluster (the InfraCluster names a Secret or an
 * identity object), never from the controller's environment alone.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { isNotFound } from "../runtime/errors.js";
import { objectNameProblem, pathSegmentNameProblem } from "../runtime/object-name.js";
import { RedactionScope } from "../runtime/redaction-scope.js";
import { type ObjectKey, objectKeyString, type ResourceDescriptor } from "../runtime/resource.js";
import type {
  CredentialsOf,
  InfrastructureClusterOf,
  PoolEnvironment,
  PoolIdentity,
} from "./driver-types.js";

/** What a {@link PoolCredentials.resolve} call may read. Every read is recorded for the cache. */
export interface CredentialsRequest<Env extends PoolEnvironment = PoolEnvironment> {
  /** The pool the credentials are for. */
  readonly pool: PoolIdentity;
  /**
   * The Cluster's infrastructure object (`infrastructureCluster` option), whose spec usually names
   * the identity (CAPA's `spec.identityRef`, CAPZ's `spec.identityRef`); `undefined` when the
   * controller was not told its kind or the Cluster names another kind.
   */
  readonly infrastructureCluster: InfrastructureClusterOf<Env> | undefined;
  /**
   * A Secret's data, decoded as UTF-8; `undefined` when it does not exist. Every value is held for
   * redaction before the hook sees it, for as long as the pool uses what it resolves: hidden from
   * logs, Events, conditions and errors (values of 4 to 7 characters only in the pool's own texts;
   * shorter ones are not secrets). Throws {@link CredentialsUnavailableError}, before any request,
   * for a name or namespace that is not a valid object name (`.`, `..`, `/`, `%`, over 253
   * characters…), and after reading, for a Secret of more than 256 values or 1 MiB.
   */
  readSecret(
    namespace: string,
    name: string,
  ): Promise<Readonly<Record<string, string>> | undefined>;
  /**
   * Any object (an identity kind such as `AWSClusterStaticIdentity`, cluster-scoped or not);
   * `undefined` when it does not exist. Its content is not treated as secret: read Secrets with
   * {@link CredentialsRequest.readSecret}. A name that is not one path segment (`.`, `..`, `/`, `%`,
   * empty, over 253 characters) is refused with {@link CredentialsUnavailableError} before any request.
   */
  readObject<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey,
  ): Promise<T | undefined>;
  /** Aborted when the reconcile times out or the controller stops. */
  readonly signal: AbortSignal;
}

/**
 * The controller's credentials hook (`MachinePoolControllerOptions.credentials`): resolves each
 * pool's cloud credentials, which the driver gets as `ctx.credentials`. The kit calls it once per
 * pool and keeps the result until a Secret or the infrastructure object it read changes, until
 * `maxAgeMs` passes, or until the cloud rejects the credentials ({@link DriverError} with reason
 * `CredentialsRejected`, see `DriverError.credentialsRejected`).
 *
 * A hook that cannot resolve credentials throws {@link CredentialsUnavailableError} saying what is
 * missing (a Secret's name, a key); the pool then waits with `Ready=False`, reason
 * `CredentialsUnavailable`, and backs off. Its message never holds a credential (the Secret values
 * read are redacted from it in any case).
 *
 * @example
 * ```ts
 * credentials: {
 *   async resolve({ infrastructureCluster, readSecret, pool }) {
 *     const ref = infrastructureCluster?.spec?.identityRef ?? { name: "default-credentials" };
 *     const data = await readSecret(pool.namespace, ref.name);
 *     if (!data?.accessKeyID || !data.secretAccessKey) {
 *       throw new CredentialsUnavailableError(`Secret ${pool.namespace}/${ref.name} needs accessKeyID and secretAccessKey`);
 *     }
 *     return { client: new AcmeClient({ key: data.accessKeyID, secret: data.secretAccessKey }) };
 *   },
 * }
 * ```
 */
export interface PoolCredentials<Env extends PoolEnvironment = PoolEnvironment> {
  /** Resolves the pool's credentials. */
  resolve(request: CredentialsRequest<Env>): Promise<CredentialsOf<Env>> | CredentialsOf<Env>;
  /**
   * Resolve again at least this often, for credentials that expire (STS sessions, workload identity
   * tokens) or objects read with `readObject` (not watched). Default 15 minutes.
   */
  readonly maxAgeMs?: number;
}

/** Thrown by a credentials hook when it cannot resolve credentials: says what is missing. */
export class CredentialsUnavailableError extends Error {
  override readonly name = "CredentialsUnavailableError";
}

const DEFAULT_MAX_AGE_MS = 15 * 60_000;
/** The API server's own limit on a Secret's data (decoded bytes). */
export const MAX_CREDENTIALS_SECRET_BYTES = 1 << 20;
/** The most values (keys of `data`) a Secret read as credentials may have. */
export const MAX_CREDENTIALS_SECRET_VALUES = 256;
/** The redaction slot of what the last finished resolution read, and of the one in progress. */
const RESOLVED = "credentials";
const RESOLVING = "credentials-resolving";

/** What one resolution read: Secrets by key with their resourceVersion (`null` when missing). */
interface CredentialsEntry {
  readonly value: unknown;
  readonly secrets: ReadonlyMap<string, string | null>;
  readonly infrastructureVersion: string | undefined;
  readonly resolvedAt: number;
}

/** How the cache reads Kubernetes: the manager's cache first (when it holds the kind), else a GET. */
export interface CredentialsReader {
  /** A Secret, `undefined` when missing. */
  secret(
    namespace: string,
    name: string,
  ): Promise<(KubernetesObject & { data?: Record<string, string> }) | undefined>;
  /**
   * A Secret's resourceVersion as the watched cache has it, without a request; `undefined` when the
   * cache does not hold that Secret (not labelled for the kit's Secret watch, or gone).
   */
  cachedSecretVersion(namespace: string, name: string): Promise<string | undefined>;
  /** Any object, `undefined` when missing. */
  object<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey,
  ): Promise<T | undefined>;
}

/**
 * The credentials each pool's hook resolved, and which pools read which Secret (so a Secret's change
 * reconciles them). One per controller; the controller is its only writer.
 */
export class PoolCredentialsCache {
  readonly #entries = new Map<string, CredentialsEntry>();
  readonly #scopes = new Map<string, RedactionScope>();
  readonly #hook: PoolCredentials<PoolEnvironment>;
  readonly #maxAgeMs: number;

  constructor(hook: PoolCredentials<PoolEnvironment>) {
    if (typeof hook?.resolve !== "function") {
      throw new TypeError("credentials: the hook needs a resolve(request) function");
    }
    const maxAgeMs = hook.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    if (!Number.isFinite(maxAgeMs) || maxAgeMs <= 0) {
      throw new RangeError(
        `credentials.maxAgeMs must be a positive number of milliseconds, got ${maxAgeMs}`,
      );
    }
    this.#hook = hook;
    this.#maxAgeMs = maxAgeMs;
  }

  /** The pools whose last resolution read the Secret `namespace/name`. */
  poolsReadingSecret(namespace: string, name: string): ObjectKey[] {
    const secret = objectKeyString({ namespace, name });
    const pools: ObjectKey[] = [];
    for (const [pool, entry] of this.#entries) {
      if (!entry.secrets.has(secret)) continue;
      const slash = pool.indexOf("/");
      pools.push({ namespace: pool.slice(0, slash), name: pool.slice(slash + 1) });
    }
    return pools;
  }

  /**
   * Forgets a pool's credentials (the cloud rejected them): the next reconcile resolves them again.
   * Their values stay redacted until that resolution replaces them.
   */
  forget(pool: ObjectKey): void {
    this.#entries.delete(objectKeyString(pool));
  }

  /** The pool is gone: forgets its credentials and releases the values held for their redaction. */
  release(pool: ObjectKey): void {
    const key = objectKeyString(pool);
    this.#entries.delete(key);
    this.#scopes.get(key)?.close();
    this.#scopes.delete(key);
  }

  /**
   * The pool's credentials: the cached ones while nothing they were read from changed, else the
   * hook's answer. Throws {@link CredentialsUnavailableError} (its own, or the hook's).
   */
  async resolve(input: {
    readonly pool: PoolIdentity;
    readonly infrastructureCluster: KubernetesObject | undefined;
    readonly reader: CredentialsReader;
    readonly now: number;
    readonly signal: AbortSignal;
    /**
     * Where the values of the Secrets read are held for redaction (the pool's scope); default, a
     * scope of this cache's own for the pool, released by {@link PoolCredentialsCache.release}.
     */
    readonly redaction?: RedactionScope;
  }): Promise<unknown> {
    const key = objectKeyString(input.pool);
    const infrastructureVersion = input.infrastructureCluster?.metadata?.resourceVersion;
    const cached = this.#entries.get(key);
    if (cached && (await this.#fresh(cached, infrastructureVersion, input))) return cached.value;

    const secrets = new Map<string, string | null>();
    const redaction = input.redaction ?? this.#ownScope(key);
    const read: string[] = [];
    const request: CredentialsRequest<PoolEnvironment> = {
      pool: input.pool,
      infrastructureCluster: input.infrastructureCluster,
      signal: input.signal,
      readSecret: async (namespace, name) => {
        checkName("Secret", "namespace", namespace, objectNameProblem);
        checkName("Secret", "name", name, objectNameProblem);
        const secret = await input.reader.secret(namespace, name);
        secrets.set(
          objectKeyString({ namespace, name }),
          secret?.metadata?.resourceVersion ?? null,
        );
        if (!secret) return undefined;
        const data = decodeSecretData(secret.data ?? {}, `${namespace}/${name}`);
        // Held before the hook sees them: whatever it throws or logs is redacted.
        read.push(...Object.values(data));
        redaction.set(RESOLVING, read);
        return data;
      },
      readObject: async (resource, objectKey) => {
        if (objectKey.namespace !== undefined && objectKey.namespace !== "") {
          checkName(resource.kind, "namespace", objectKey.namespace, pathSegmentNameProblem);
        }
        checkName(resource.kind, "name", objectKey.name, pathSegmentNameProblem);
        return input.reader.object(resource, objectKey);
      },
    };
    let value: unknown;
    try {
      value = await this.#hook.resolve(request);
    } catch (error) {
      this.#entries.delete(key);
      if (error instanceof CredentialsUnavailableError) throw error;
      if (isNotFound(error)) {
        throw new CredentialsUnavailableError(
          "an object the credentials hook read does not exist",
          {
            cause: error,
          },
        );
      }
      throw new CredentialsUnavailableError(
        `the credentials hook failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    } finally {
      // The values of this resolution replace the last one's; the pool's texts of this reconcile
      // (a refusal quoting them, a driver error) are written while they are held.
      redaction.set(RESOLVED, read);
      redaction.set(RESOLVING, []);
    }
    this.#entries.set(key, { value, secrets, infrastructureVersion, resolvedAt: input.now });
    return value;
  }

  #ownScope(key: string): RedactionScope {
    let scope = this.#scopes.get(key);
    if (!scope) {
      scope = new RedactionScope();
      this.#scopes.set(key, scope);
    }
    return scope;
  }

  async #fresh(
    entry: CredentialsEntry,
    infrastructureVersion: string | undefined,
    input: { readonly reader: CredentialsReader; readonly now: number },
  ): Promise<boolean> {
    if (input.now - entry.resolvedAt >= this.#maxAgeMs) return false;
    if (entry.infrastructureVersion !== infrastructureVersion) return false;
    for (const [secret, version] of entry.secrets) {
      const slash = secret.indexOf("/");
      const seen = await input.reader.cachedSecretVersion(
        secret.slice(0, slash),
        secret.slice(slash + 1),
      );
      // Not in the watched cache: only maxAgeMs (or a rejection) refreshes it.
      if (seen !== undefined && seen !== version) return false;
    }
    return true;
  }
}

/** Refuses a name that is not one path segment (or not an object name) before any request. */
function checkName(
  kind: string,
  field: "name" | "namespace",
  name: string,
  problemOf: (name: unknown) => string | undefined,
): void {
  const problem = problemOf(name);
  if (problem) {
    throw new CredentialsUnavailableError(
      `the credentials name a ${kind} whose ${field} is invalid: ${problem}; name an existing ${kind} by a valid name`,
    );
  }
}

/** Decoded bytes of a base64 text, as the API server counts a Secret's size, without decoding it. */
function decodedLength(base64: string): number {
  let padding = 0;
  if (base64.endsWith("==")) padding = 2;
  else if (base64.endsWith("=")) padding = 1;
  return Math.floor((base64.length * 3) / 4) - padding;
}

/**
 * Decodes base64 Secret data, refusing (before any per-value work) a Secret with more than
 * {@link MAX_CREDENTIALS_SECRET_VALUES} values or more than {@link MAX_CREDENTIALS_SECRET_BYTES}.
 */
function decodeSecretData(data: Record<string, string>, name: string): Record<string, string> {
  const fields = Object.keys(data);
  if (fields.length > MAX_CREDENTIALS_SECRET_VALUES) {
    throw new CredentialsUnavailableError(
      `Secret ${name} has ${fields.length} values, more than the ${MAX_CREDENTIALS_SECRET_VALUES} a Secret read as credentials may have: not read as credentials; keep only the keys the credentials need`,
    );
  }
  let total = 0;
  for (const field of fields) {
    const base64 = data[field];
    total += typeof base64 === "string" ? decodedLength(base64) : 0;
  }
  if (total > MAX_CREDENTIALS_SECRET_BYTES) {
    throw new CredentialsUnavailableError(
      `Secret ${name} holds ${total} bytes, more than ${MAX_CREDENTIALS_SECRET_BYTES} (1 MiB): not read as credentials; keep only the keys the credentials need`,
    );
  }
  const decoded: Record<string, string> = {};
  for (const field of fields) {
    const base64 = data[field];
    decoded[field] =
      typeof base64 === "string" ? Buffer.from(base64, "base64").toString("utf8") : "";
  }
  return decoded;
}
