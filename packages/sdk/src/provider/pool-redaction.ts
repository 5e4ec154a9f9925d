/**
 * One redaction scope per pool: what the kit reads for a pool (its credentials' Secrets, its
 * bootstrap data) stays redacted while the pool exists, whatever other pools register, and is
 * released when the pool is gone. The pool's reconcile runs inside its scope, so its own conditions,
 * Events and logs also hide its short values.
 *
 * @module
 */
import { RedactionScope } from "../runtime/redaction-scope.js";
import { type ObjectKey, objectKeyString } from "../runtime/resource.js";

/** The redaction scopes of a controller's pools, by pool key. */
export class PoolRedactions {
  readonly #scopes = new Map<string, RedactionScope>();

  /** The pool's scope, made on first use. */
  of(pool: ObjectKey): RedactionScope {
    const key = objectKeyString(pool);
    let scope = this.#scopes.get(key);
    if (!scope) {
      scope = new RedactionScope();
      this.#scopes.set(key, scope);
    }
    return scope;
  }

  /** The pool is gone: releases everything its scope held. */
  drop(pool: ObjectKey): void {
    const key = objectKeyString(pool);
    this.#scopes.get(key)?.close();
    this.#scopes.delete(key);
  }
}
