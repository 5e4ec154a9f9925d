import { describe, expect, it } from "vitest";
import { DriverError } from "./driver-error.js";
import { assertPoolOwns, poolOwnerTags } from "./ownership.js";

const pool = { namespace: "team-a", name: "pool-1", uid: "u-1", clusterName: "demo" };

describe("pool ownership tags", () => {
  it("names the pool by namespace and name and the cluster, never the UID", () => {
    expect(poolOwnerTags(pool)).toEqual({
      "capi-ts.io/pool": "team-a/pool-1",
      "capi-ts.io/cluster": "demo",
    });
    expect(poolOwnerTags(pool, "capi-ts-")).toEqual({
      "capi-ts-pool": "team-a/pool-1",
      "capi-ts-cluster": "demo",
    });
  });

  it("accepts the pool's own resource and refuses another's with a terminal, bounded error", () => {
    expect(() =>
      assertPoolOwns({ kind: "group", name: "g", tags: poolOwnerTags(pool) }, pool),
    ).not.toThrow();
    const refuse = (tags: Record<string, string> | undefined) => {
      try {
        assertPoolOwns({ kind: "group", name: "team-a-pool-1", tags }, pool);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const other = refuse({ "capi-ts.io/pool": "team-b/pool-1" });
    expect(other).toBeInstanceOf(DriverError);
    expect((other as DriverError).failure).toMatchObject({
      kind: "terminal",
      reason: "ResourceNotOwned",
      message:
        'group "team-a-pool-1" exists but belongs to team-b/pool-1, not team-a/pool-1; delete or rename the group, or use another pool name',
    });
    expect((refuse(undefined) as DriverError).failure.message).toMatch(/belongs to no pool/);
    const long = refuse({ "capi-ts.io/pool": "x".repeat(10_000) }) as DriverError;
    expect(long.failure.message.length).toBeLessThan(400);
  });
});
