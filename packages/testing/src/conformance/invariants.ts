import { isProvisioned } from "@capi-ts/sdk/contract";
import type { KubernetesObject } from "@kubernetes/client-node";

/**
 * A broken invariant of the InfraMachinePool contract. `check` names it (e.g.
 * `status.providerIDList`, the names of the project's contract table); the message says what was seen.
 */
export class ConformanceError extends Error {
  /** The check that failed, e.g. `pause.noCloudCallsWhilePaused`. */
  readonly check: string;

  /**
   * @param check - the check's name
   * @param message - what was expected and what was seen
   */
  constructor(check: string, message: string) {
    super(`[${check}] ${message}`);
    this.name = "ConformanceError";
    this.check = check;
  }
}

/** An InfraMachinePool as the suite reads it (only contract fields). */
export interface ConformancePoolObject extends KubernetesObject {
  /** Contract spec fields. */
  spec?: { providerIDList?: string[]; [key: string]: unknown };
  /** Contract status fields. */
  status?: {
    ready?: boolean;
    replicas?: number;
    initialization?: { provisioned?: boolean };
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    [key: string]: unknown;
  };
}

const show = (ids: readonly string[]): string => JSON.stringify(ids);

/** Checks that hold for every version of an InfraMachinePool the server ever stores. */
export function checkPoolObject(pool: ConformancePoolObject): ConformanceError[] {
  const out: ConformanceError[] = [];
  const name = `${pool.metadata?.namespace}/${pool.metadata?.name}`;
  const ids = pool.spec?.providerIDList ?? [];
  const sorted = [...ids].sort();
  if (ids.some((id, i) => id !== sorted[i])) {
    out.push(
      new ConformanceError(
        "status.providerIDList",
        `providerIDList must be sorted: got ${show(ids)} on ${name}`,
      ),
    );
  }
  if (new Set(ids).size !== ids.length) {
    out.push(
      new ConformanceError(
        "status.providerIDList",
        `providerIDList must not repeat an ID: got ${show(ids)} on ${name}`,
      ),
    );
  }
  const bad = ids.find((id) => id.length < 1 || id.length > 512);
  if (bad !== undefined) {
    out.push(
      new ConformanceError(
        "status.providerIDList",
        `every providerID must be 1–512 characters: got ${JSON.stringify(bad)} on ${name}`,
      ),
    );
  }
  const status = pool.status ?? {};
  const provisioned = status.initialization?.provisioned;
  if (status.ready !== undefined && provisioned !== undefined && status.ready !== provisioned) {
    out.push(
      new ConformanceError(
        "status.readyAndProvisionedAgree",
        `status.ready (${status.ready}) and status.initialization.provisioned (${provisioned}) must agree on ${name}`,
      ),
    );
  }
  for (const field of ["failureReason", "failureMessage"]) {
    if (status[field] !== undefined) {
      out.push(
        new ConformanceError(
          "status.noFailureFields",
          `status.${field} must never be set (core CAPI panics on it): got ${JSON.stringify(status[field])} on ${name}`,
        ),
      );
    }
  }
  const foreign = pool.metadata?.ownerReferences?.find(
    (r) =>
      r.controller === true &&
      !(r.kind === "MachinePool" && r.apiVersion.startsWith("cluster.x-k8s.io/")),
  );
  if (foreign) {
    out.push(
      new ConformanceError(
        "ownership.noForeignController",
        `only the MachinePool may be the controller owner: got ${foreign.kind} ${foreign.name} on ${name}`,
      ),
    );
  }
  return out;
}

/**
 * Remembers every InfraMachinePool version it is shown and records broken invariants: the per-object
 * checks, and "provisioned never goes back to false" across versions.
 */
export class InvariantMonitor {
  readonly #violations: ConformanceError[] = [];
  readonly #provisioned = new Set<string>();
  readonly #finalizerSeen = new Map<string, string[]>();

  /** Records one observed version of a pool. */
  observe(pool: ConformancePoolObject): void {
    const uid = pool.metadata?.uid ?? "";
    for (const error of checkPoolObject(pool)) this.#record(error);
    if (isProvisioned(pool)) this.#provisioned.add(uid);
    else if (this.#provisioned.has(uid) && pool.status !== undefined) {
      this.#record(
        new ConformanceError(
          "status.provisionedSticky",
          `status.ready/initialization.provisioned went from true back to false on ${pool.metadata?.namespace}/${pool.metadata?.name}`,
        ),
      );
    }
    const finalizers = pool.metadata?.finalizers ?? [];
    if (finalizers.length > 0 && !this.#finalizerSeen.has(uid)) {
      this.#finalizerSeen.set(uid, finalizers);
    }
  }

  /** Finalizers first seen on the pool with this UID (undefined if none seen yet). */
  finalizersSeen(uid: string): string[] | undefined {
    return this.#finalizerSeen.get(uid);
  }

  /** Records a violation found elsewhere. */
  record(error: ConformanceError): void {
    this.#record(error);
  }

  #record(error: ConformanceError): void {
    if (!this.#violations.some((v) => v.message === error.message)) this.#violations.push(error);
  }

  /** Every violation recorded so far. */
  violations(): readonly ConformanceError[] {
    return this.#violations;
  }

  /** Throws the first violation recorded (with a count of the rest). */
  assertClean(): void {
    const [first, ...rest] = this.#violations;
    if (!first) return;
    if (rest.length === 0) throw first;
    throw new ConformanceError(
      first.check,
      `${first.message.replace(`[${first.check}] `, "")} (and ${rest.length} more: ${rest
        .map((v) => v.check)
        .join(", ")})`,
    );
  }
}
