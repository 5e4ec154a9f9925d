import { describe, expect, it } from "vitest";
import type { TemplateStamp } from "./driver-types.js";
import {
  prunableVersions,
  stableStringify,
  stampIsCurrent,
  stampIsExact,
  TEMPLATE_STAMP_TAG_KEYS,
  targetStamp,
  templateStampFromTags,
  templateStampToTags,
} from "./stamp.js";
import { instanceOf as instance } from "./testing.js";

describe("stamps", () => {
  it("hash template inputs independently of key order and undefined members", () => {
    expect(stableStringify({ b: 1, a: [1, { d: undefined, c: "x" }] })).toBe(
      '{"a":[1,{"c":"x"}],"b":1}',
    );
    const a = targetStamp({ image: "i", size: "s" }, "data", "ns/secret");
    const b = targetStamp({ size: "s", image: "i", extra: undefined }, "data", "ns/secret");
    expect(a).toEqual(b);
    expect(a.specHash).toMatch(/^[0-9a-f]{40}$/);
    expect(() => targetStamp({ n: Number.NaN }, "", "")).toThrow(/non-finite/);
  });

  it("tell a token-only change (current, not exact) from a rollout (not current)", () => {
    const target: TemplateStamp = targetStamp({ image: "i" }, "token-2", "ns/s");
    const tokenOnly = targetStamp({ image: "i" }, "token-1", "ns/s");
    const renamed = targetStamp({ image: "i" }, "token-2", "ns/s-2");
    const respec = targetStamp({ image: "j" }, "token-2", "ns/s");
    expect([stampIsCurrent(tokenOnly, target), stampIsExact(tokenOnly, target)]).toEqual([
      true,
      false,
    ]);
    expect(stampIsCurrent(renamed, target)).toBe(false);
    expect(stampIsCurrent(respec, target)).toBe(false);
    expect(stampIsCurrent(undefined, target)).toBe(false);
    expect(stampIsExact(target, target)).toBe(true);
  });

  it("prune only versions that are not newest, not the group's and not used by a live instance", () => {
    const versions = ["1", "2", "3", "4", "5"].map((version) => ({ version, stamp: undefined }));
    const instances = [
      instance("i1", { version: "2" }),
      instance("i2", { version: "1", state: "terminated" }),
      instance("i3", { version: "3", state: "terminating" }),
    ];
    expect(prunableVersions(versions, "4", instances)).toEqual(["1"]);
    expect(prunableVersions([], undefined, [])).toEqual([]);
  });

  it("never prunes a version the driver marks not deletable (the cloud's default)", () => {
    const versions = [
      { version: "1", stamp: undefined, deletable: false },
      { version: "2", stamp: undefined },
      { version: "3", stamp: undefined, deletable: true },
      { version: "4", stamp: undefined },
    ];
    expect(prunableVersions(versions, "4", [])).toEqual(["2", "3"]);
  });
});

describe("template stamp tags", () => {
  const stamp = { specHash: "a1b2", bootstrapHash: "c3d4", bootstrapRef: "e5f6" };

  it("round-trips through tags with the default and a custom prefix", () => {
    expect(templateStampToTags(stamp)).toEqual({
      "capi-ts.io/spec-hash": "a1b2",
      "capi-ts.io/bootstrap-hash": "c3d4",
      "capi-ts.io/bootstrap-ref": "e5f6",
    });
    expect(templateStampFromTags(templateStampToTags(stamp))).toEqual(stamp);
    const gce = templateStampToTags(stamp, "capi-ts-");
    expect(Object.keys(gce).every((k) => /^[a-z0-9-]+$/.test(k))).toBe(true);
    expect(templateStampFromTags(gce, "capi-ts-")).toEqual(stamp);
  });

  it("returns undefined when any part is missing", () => {
    const tags = templateStampToTags(stamp);
    delete tags[`capi-ts.io/${TEMPLATE_STAMP_TAG_KEYS.bootstrapRef}`];
    expect(templateStampFromTags(tags)).toBeUndefined();
    expect(templateStampFromTags(undefined)).toBeUndefined();
    expect(templateStampFromTags({ other: "x" })).toBeUndefined();
  });
});
