import { describe, expect, it } from "vitest";
import { characterCount } from "../runtime/text.js";
import { MAX_CONDITION_MESSAGE_LENGTH } from "./constants.js";
import { getV1Beta1Condition, setV1Beta1Condition } from "./v1beta1.js";
import { getCondition, setCondition } from "./v1beta2.js";

describe("condition messages fit every condition schema", () => {
  it("cuts a message over 10,240 characters with a marker, in both shapes", () => {
    const pool = { metadata: { name: "p", generation: 1 }, status: {} };
    const long = "m".repeat(40_000);
    setCondition(pool, { type: "Ready", status: "False", reason: "R", message: long });
    setV1Beta1Condition(pool, { type: "Ready", status: "False", reason: "R", message: long });
    for (const message of [
      getCondition(pool, "Ready")?.message ?? "",
      getV1Beta1Condition(pool, "Ready")?.message ?? "",
    ]) {
      expect(characterCount(message)).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE_LENGTH);
      expect(message).toMatch(/m… \(\d+ more characters\)$/);
    }
  });
});
