import { describe, expect, expectTypeOf, it } from "vitest";
import type { PoolContext } from "./driver-types.js";
import {
  groupIntent,
  newTemplateVersion,
  poolContext,
  TEST_POOL,
  templateStamp,
} from "./testing-inputs.js";

describe("the driver test factories", () => {
  it("fill a context a test names only the spec of, and keep what it sets", () => {
    const ctx = poolContext({ spec: { size: "small" } });
    expect(ctx).toMatchObject({
      pool: TEST_POOL,
      spec: { size: "small" },
      version: undefined,
      failureDomains: [],
      replicas: 1,
    });
    expect(ctx.signal.aborted).toBe(false);
    const other = poolContext({
      spec: { size: "large" },
      pool: { namespace: "team-b" },
      replicas: undefined,
      version: "v1.35.0",
    });
    expect(other.pool).toEqual({ ...TEST_POOL, namespace: "team-b" });
    expect(other.replicas).toBeUndefined();
    expect(other.version).toBe("v1.35.0");
  });

  it("require the credentials an environment types, and pass them through", () => {
    interface Env {
      readonly credentials: { readonly token: string };
    }
    const ctx = poolContext<{ size: string }, Env>({
      spec: { size: "small" },
      credentials: { token: "t" },
    });
    expectTypeOf(ctx).toEqualTypeOf<PoolContext<{ size: string }, Env>>();
    expect(ctx.credentials.token).toBe("t");
    // @ts-expect-error: the environment declares credentials, so a context without them is refused
    poolContext<{ size: string }, Env>({ spec: { size: "small" } });
  });

  it("compute the base64 user data from the user data unless a test sets it", () => {
    const version = newTemplateVersion({ userData: "#!/bin/sh\necho hi" });
    expect(Buffer.from(version.userDataBase64, "base64").toString("utf8")).toBe(
      "#!/bin/sh\necho hi",
    );
    expect(version).toMatchObject({ format: "cloud-config", stamp: templateStamp() });
    expect(newTemplateVersion({ userDataBase64: "H4sI" }).userDataBase64).toBe("H4sI");
  });

  it("give a stamp and a group intent with what a test sets over the defaults", () => {
    expect(templateStamp({ specHash: "spec-2" })).toEqual({
      specHash: "spec-2",
      bootstrapHash: "bootstrap-1",
      bootstrapRef: "bootstrap-ref-1",
    });
    expect(groupIntent({ settings: { zones: ["a"] } })).toEqual({
      replicas: 1,
      templateVersion: "1",
      settings: { zones: ["a"] },
    });
    expect(groupIntent({ settings: {}, replicas: undefined }).replicas).toBeUndefined();
  });
});
