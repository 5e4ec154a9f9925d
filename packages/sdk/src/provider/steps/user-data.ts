/**
 * The user data a new template version (or group model) is created with: the bootstrap data, or
 * what fetches it from the driver's store; gzip-compressed when the driver asks; checked against the
 * cloud's limit before anything is created. A step of `template` and `group`.
 *
 * @module
 */
import { holdSecret } from "../../runtime/redaction-scope.js";
import type { NewTemplateVersion, TemplateStamp, TemplateVersion } from "../driver-types.js";
import { StepFailure } from "../errors.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope } from "../scope.js";

/** What `bootstrap` holds, as the step needs it. */
interface BootstrapInput {
  readonly userData: string;
  readonly format: "cloud-config" | "ignition";
}

function bytes(count: number): string {
  return `${count.toLocaleString("en-US")} bytes`;
}

/**
 * The {@link NewTemplateVersion} for `bootstrap` and `stamp`. Puts the payload into the driver's store
 * first when it has one (keyed by the stamp's bootstrap hash). Throws a terminal `BootstrapDataTooLarge`
 * when what would be sent exceeds `userData.limitBytes`.
 */
export async function userDataFor<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  step: string,
  bootstrap: BootstrapInput,
  stamp: TemplateStamp,
): Promise<NewTemplateVersion> {
  const options = scope.driver.userData;
  const store = options?.store;
  let userData = bootstrap.userData;
  if (store) {
    userData = await scope.call("userData.store.put", (ctx) =>
      store.put(ctx, {
        key: stamp.bootstrapHash,
        data: bootstrap.userData,
        format: bootstrap.format,
      }),
    );
    // The stub usually carries a signed URL or a token: as secret as the payload it points at.
    holdSecret(userData);
  }
  const raw = Buffer.from(userData, "utf8");
  const compressed = options?.compress === "gzip" && bootstrap.format === "cloud-config";
  const sent = compressed ? process.getBuiltinModule("node:zlib").gzipSync(raw, { level: 9 }) : raw;
  const limit = options?.limitBytes;
  if (limit !== undefined && sent.length > limit) {
    const ways = [
      ...(compressed || bootstrap.format !== "cloud-config"
        ? []
        : ['compress it (driver userData.compress: "gzip"; cloud-init reads gzip)']),
      ...(store ? [] : ["keep it in an object store (driver userData.store)"]),
    ];
    throw new StepFailure(
      step,
      {
        kind: "terminal",
        reason: PoolReasons.BootstrapDataTooLarge,
        message: `the bootstrap data is ${bytes(sent.length)}${compressed ? " after gzip" : ""} (${bootstrap.format}), over the cloud's user data limit of ${bytes(limit)}${ways.length > 0 ? `: ${ways.join(", or ")}` : "; make the bootstrap configuration smaller"}`,
      },
      undefined,
    );
  }
  const userDataBase64 = sent.toString("base64");
  holdSecret(userDataBase64);
  return { userData, userDataBase64, format: bootstrap.format, stamp };
}

/**
 * After template versions were pruned: deletes the stored payloads no remaining version names (by the
 * bootstrap hash of its stamp). Does nothing without a store.
 */
export async function pruneStoredUserData<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  remaining: readonly TemplateVersion[] | undefined,
): Promise<void> {
  const store = scope.driver.userData?.store;
  if (!store) return;
  const keep = new Set<string>();
  for (const version of remaining ?? []) {
    if (version.stamp) keep.add(version.stamp.bootstrapHash);
  }
  await scope.call("userData.store.prune", (ctx) => store.prune(ctx, keep));
}
