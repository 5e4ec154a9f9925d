/**
 * Factories of what the kit hands a driver, for a driver's unit tests: each fills what a test does
 * not care about, so a test names only what it checks, and keeps compiling when a later release adds
 * a member to the type (see the versioning guide: such an addition is not a break for a driver, only
 * for a test that writes the object out by hand).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type {
  GroupIntent,
  NewTemplateVersion,
  PoolAccess,
  PoolCallContext,
  PoolContext,
  PoolEnvironment,
  PoolIdentity,
  TemplateStamp,
} from "./driver-types.js";

/** The pool {@link poolContext} names unless told otherwise: `default/pool-a` of Cluster `cluster-a`. */
export const TEST_POOL: PoolIdentity = {
  namespace: "default",
  name: "pool-a",
  uid: "uid-pool-a",
  clusterName: "cluster-a",
};

/**
 * What {@link poolContext} needs: the spec, any other member of {@link PoolCallContext} (`pool` field by
 * field), and the environment's members ({@link PoolAccess}: `credentials` is required when the
 * environment declares its type).
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Env - the driver's environment
 */
export type PoolContextInput<Spec, Env extends PoolEnvironment = PoolEnvironment> = {
  /** The InfraMachinePool's spec. */
  readonly spec: Spec;
  /** The pool, field by field over {@link TEST_POOL}. */
  readonly pool?: Partial<PoolIdentity>;
} & Partial<Omit<PoolCallContext<Spec>, "spec" | "pool">> &
  PoolAccess<Env>;

/**
 * A driver call's context as the kit builds it: {@link TEST_POOL}, no Kubernetes version, no failure
 * domains, 1 replica, a signal that never aborts, and what `input` sets.
 *
 * @example
 * ```ts
 * import { poolContext } from "@capi-ts/sdk/provider/testing";
 *
 * const ctx = poolContext<FooMachinePoolSpec, FooEnvironment>({
 *   spec: { instanceType: "small" },
 *   credentials: cloud, // required: FooEnvironment declares its type
 *   version: "v1.35.0",
 * });
 * await driver.getGroup(ctx);
 * ```
 */
export function poolContext<Spec, Env extends PoolEnvironment = PoolEnvironment>(
  input: PoolContextInput<Spec, Env>,
): PoolContext<Spec, Env> {
  const { pool, ...rest } = input;
  // The spread keeps the environment's members; TypeScript cannot follow PoolAccess's conditional
  // type through it, so the result is stated.
  return {
    version: undefined,
    failureDomains: [],
    replicas: 1,
    signal: new AbortController().signal,
    ...rest,
    pool: { ...TEST_POOL, ...pool },
  } as PoolContext<Spec, Env>;
}

/**
 * A template stamp: `spec-1`, `bootstrap-1`, `bootstrap-ref-1` unless told otherwise; give two
 * versions different hashes to make one outdated.
 *
 * @example
 * ```ts
 * templateStamp({ specHash: "spec-2" }); // a rollout's target
 * ```
 */
export function templateStamp(input: Partial<TemplateStamp> = {}): TemplateStamp {
  return {
    specHash: "spec-1",
    bootstrapHash: "bootstrap-1",
    bootstrapRef: "bootstrap-ref-1",
    ...input,
  };
}

/**
 * What the kit passes to `createTemplateVersion`: cloud-config user data (`#cloud-config\n` unless
 * told otherwise), its base64 form computed from it (set `userDataBase64` only to test a compressed
 * or stored payload), and a {@link templateStamp}.
 *
 * @example
 * ```ts
 * const version = await driver.createTemplateVersion(ctx, newTemplateVersion({ userData: "#!/bin/sh" }));
 * ```
 */
export function newTemplateVersion(input: Partial<NewTemplateVersion> = {}): NewTemplateVersion {
  const userData = input.userData ?? "#cloud-config\n";
  return {
    format: "cloud-config",
    stamp: templateStamp(),
    ...input,
    userData,
    userDataBase64: input.userDataBase64 ?? Buffer.from(userData, "utf8").toString("base64"),
  };
}

/**
 * What {@link groupIntent} needs: the group's settings, and any other member of {@link GroupIntent}.
 *
 * @typeParam Settings - the driver's group settings
 */
export type GroupIntentInput<Settings> = { readonly settings: Settings } & Partial<
  Omit<GroupIntent<Settings>, "settings">
>;

/**
 * What the kit passes to `createGroup`: 1 replica from template version `"1"`, no bounds, and what
 * `input` sets (`replicas: undefined` is an external autoscaler's pool).
 *
 * @example
 * ```ts
 * await driver.createGroup(ctx, groupIntent({ replicas: 2, settings: { zones: ["zone-a"] } }));
 * ```
 */
export function groupIntent<Settings>(input: GroupIntentInput<Settings>): GroupIntent<Settings> {
  return { replicas: 1, templateVersion: "1", ...input };
}
