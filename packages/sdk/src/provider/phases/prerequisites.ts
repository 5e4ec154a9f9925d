/**
 * The phases before any cloud call: the Cluster's infrastructure, the spec, the bootstrap data, and
 * the desired state computed from the driver's two pure functions.
 *
 * @module
 */
import { getCondition } from "../../conditions/v1beta2.js";
import { readBootstrapData } from "../../contract/bootstrap.js";
import { readCluster } from "../../contract/readers.js";
import { ApiError } from "../../runtime/errors.js";
import { redactText } from "../../runtime/redact.js";
import { holdSecret } from "../../runtime/redaction-scope.js";
import { CredentialsUnavailableError } from "../credentials.js";
import { describeSpecIssues, StepFailure } from "../errors.js";
import type { PhaseResult, PoolPhase } from "../phase.js";
import { contextFor } from "../pool-scope.js";
import { PoolConditionTypes, PoolReasons } from "../reasons.js";
import { inputsFingerprint, latchedRunaway, stopRunaway } from "../runaway.js";
import type { ReadyState } from "../scope.js";
import { shortHash, stableStringify, targetStamp } from "../stamp.js";

function waiting(reason: string, message: string, requeueAfterMs?: number): PhaseResult {
  return {
    ready: { status: "False", reason, message },
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}

/** Waits for `Cluster.status.initialization.infrastructureProvisioned` (unless turned off). */
export const clusterInfrastructurePhase: PoolPhase<unknown, unknown, never, never> = {
  name: "clusterInfrastructure",
  reads: [],
  writes: [],
  run(scope) {
    if (!scope.options.waitForClusterInfrastructure || !scope.cluster) return undefined;
    const cluster = readCluster(scope.cluster);
    if (cluster.infrastructureProvisioned) return undefined;
    return waiting(
      PoolReasons.WaitingForClusterInfrastructure,
      `Cluster ${cluster.name} infrastructure is not provisioned yet`,
    );
  },
};

/**
 * The Cluster's infrastructure object and the pool's credentials, for the driver's context: before
 * any cloud call (in the delete pipeline too). Credentials that cannot be resolved are a transient
 * failure (`CredentialsUnavailable`): the pool backs off and waits, naming what is missing.
 */
export const cloudAccessPhase: PoolPhase<unknown, unknown, never, "access"> = {
  name: "cloudAccess",
  reads: [],
  writes: ["access"],
  async run(scope) {
    if (!scope.api.resolveAccess) {
      scope.write("access", { credentials: undefined, infrastructureCluster: undefined });
      return undefined;
    }
    try {
      scope.write("access", await scope.api.resolveAccess());
    } catch (error) {
      if (!(error instanceof CredentialsUnavailableError)) throw error;
      // Named after the phase: "credentials: …" would read as an assignment to the redactor.
      throw new StepFailure(
        "cloudAccess",
        {
          kind: "transient",
          reason: PoolReasons.CredentialsUnavailable,
          message: redactText(error.message),
        },
        error,
      );
    }
    return undefined;
  },
};

/** Validates the spec with the kind's schema; an invalid spec makes no cloud call. */
export const validateSpecPhase: PoolPhase<unknown, unknown, never, "spec"> = {
  name: "validateSpec",
  reads: [],
  writes: ["spec"],
  run(scope) {
    const schema = scope.options.schema;
    if (!schema) {
      const spec = scope.pool.spec ?? {};
      scope.write("spec", { spec, context: contextFor(scope, spec) });
      return undefined;
    }
    const parsed = schema.safeParse(scope.pool);
    if (!parsed.success) {
      const message = `invalid spec: ${describeSpecIssues(parsed.error)}`;
      scope.log.error({ reason: PoolReasons.InvalidSpec }, message);
      return waiting(PoolReasons.InvalidSpec, message);
    }
    const spec = parsed.data.spec;
    scope.write("spec", { spec, context: contextFor(scope, spec) });
    return undefined;
  },
};

/** Reads the MachinePool's bootstrap data (never logged), unless the pool needs none. */
export const bootstrapDataPhase: PoolPhase<unknown, unknown, never, "bootstrap"> = {
  name: "bootstrapData",
  reads: [],
  writes: ["bootstrap"],
  async run(scope) {
    if (scope.options.bootstrapData === "none") {
      scope.write("bootstrap", { userData: "", format: "cloud-config", secretRef: "" });
      return undefined;
    }
    const machinePool = scope.machinePool;
    if (!machinePool) return waiting(PoolReasons.WaitingForOwner, "no owner MachinePool");
    let data: Awaited<ReturnType<typeof readBootstrapData>>;
    try {
      data = await readBootstrapData(
        (namespace, name) => scope.api.readSecret(namespace, name),
        machinePool,
      );
    } catch (error) {
      // An API error's body is the server's to write and may echo what it refused: only its status.
      const why =
        error instanceof ApiError
          ? `reading the bootstrap data Secret failed: HTTP ${error.code} ${error.status.reason ?? ""}`.trim()
          : redactText(error instanceof Error ? error.message : String(error));
      return waiting(PoolReasons.WaitingForBootstrapData, why, scope.options.pollMs);
    }
    if (!data) {
      const name = machinePool.metadata?.name ?? "";
      return waiting(
        PoolReasons.WaitingForBootstrapData,
        `MachinePool ${name} has no bootstrap data secret yet`,
      );
    }
    const format = data.format;
    if (format !== "cloud-config" && format !== "ignition") {
      return waiting(
        PoolReasons.UnsupportedBootstrapFormat,
        `bootstrap data format ${JSON.stringify(data.format)} is neither cloud-config nor ignition`,
        scope.options.resyncMs,
      );
    }
    const userData = data.text();
    holdSecret(userData);
    scope.write("bootstrap", {
      userData,
      format: format === "ignition" ? "ignition" : "cloud-config",
      secretRef: `${data.secretRef.namespace}/${data.secretRef.name}`,
    });
    return undefined;
  },
};

/**
 * The `VersionRollout` condition: False (`VersionNotRolled`) from the reconcile that sees the
 * MachinePool's version change while the template inputs' hash stays the same — nothing rolls for it —
 * until the inputs change or the version is set back. After a restart the kit has no earlier version
 * to compare with: a condition already on the pool is kept while the inputs stay as they are.
 */
function versionRollout(
  scope: Parameters<typeof desiredStatePhase.run>[0],
  version: string | undefined,
  specHash: string,
): ReadyState | undefined {
  const memory = scope.memory;
  const last = memory.lastVersion;
  memory.lastVersion = { version, specHash };
  const held = memory.versionNotRolled;
  if (held && (held.specHash !== specHash || held.from === version)) {
    memory.versionNotRolled = undefined;
  } else if (last && last.version !== version && last.specHash === specHash) {
    memory.versionNotRolled = { from: held?.from ?? last.version, to: version, specHash };
    scope.events.warning(
      PoolReasons.VersionNotRolled,
      versionMessage(memory.versionNotRolled.from, version),
    );
  } else if (!last && !held) {
    const previous = getCondition(scope.pool, PoolConditionTypes.VersionRollout);
    if (previous?.reason === PoolReasons.VersionNotRolled) {
      memory.versionNotRolled = { from: undefined, to: version, specHash };
      return { status: "False", reason: previous.reason, message: previous.message ?? "" };
    }
  }
  const notRolled = memory.versionNotRolled;
  if (!notRolled) return undefined;
  return {
    status: "False",
    reason: PoolReasons.VersionNotRolled,
    message: versionMessage(notRolled.from, notRolled.to),
  };
}

function versionMessage(from: string | undefined, to: string | undefined): string {
  return `the MachinePool's version changed from ${from ?? "unset"} to ${to ?? "unset"} but the driver's template inputs did not, so no instance is replaced and the Nodes keep their kubelet version; change the pool's spec with the version (its image), or make templateInputs read the version`;
}

/**
 * Computes the target template stamp and group settings from the driver's pure functions, and
 * stops a runaway: `templateInputs` that differ for the same inputs would roll the pool forever.
 */
export const desiredStatePhase: PoolPhase<unknown, unknown, "spec" | "bootstrap", "desired"> = {
  name: "desiredState",
  reads: ["spec", "bootstrap"],
  writes: ["desired"],
  run(scope) {
    const ctx = scope.read("spec").context;
    const bootstrap = scope.read("bootstrap");
    const latched = latchedRunaway(scope);
    if (latched) return latched;
    const inputs = scope.driver.templateInputs(ctx);
    const specHash = shortHash(stableStringify(inputs));
    const again = shortHash(stableStringify(scope.driver.templateInputs(ctx)));
    const settings = scope.driver.groupSettings(ctx);
    const context = inputsFingerprint(scope);
    const last = scope.memory.lastInputs;
    if (specHash !== again || (last?.context === context && last.specHash !== specHash)) {
      return stopRunaway(
        scope,
        PoolReasons.TemplateInputsNotPure,
        "templateInputs returned different values for the same pool (does it read the clock, a random number or mutable state?), which would roll the pool on every reconcile",
      );
    }
    scope.memory.lastInputs = { context, specHash, settings: stableStringify(settings) };
    const versionCondition = versionRollout(scope, ctx.version, specHash);
    scope.write("desired", {
      stamp: targetStamp(inputs, bootstrap.userData, bootstrap.secretRef),
      settings,
      ...(versionCondition ? { versionCondition } : {}),
    });
    return undefined;
  },
};
