import { describe, expect, it } from "vitest";
import { redactText, registerSecret } from "./redact.js";
import { holdSecret, RedactionScope } from "./redaction-scope.js";

describe("redaction scopes", () => {
  it("keeps a scope's values hidden whatever another scope or registerSecret adds", () => {
    const b = new RedactionScope();
    b.set("credentials", ["tenant-b-token-0123"]);
    const a = new RedactionScope();
    a.set(
      "credentials",
      Array.from({ length: 5_000 }, (_, i) => `tenant-a-value-${i}`),
    );
    for (let i = 0; i < 3_000; i++) registerSecret(`registered-value-${i}`);
    expect(redactText("token tenant-b-token-0123 refused")).toBe("token [REDACTED] refused");
    expect(redactText(Buffer.from("tenant-b-token-0123").toString("base64"))).toBe("[REDACTED]");
    expect(redactText("a: tenant-a-value-4999.")).toBe("a: [REDACTED].");
    // registerSecret keeps its newest 1,024 forms: the oldest are gone, the scopes' are not.
    expect(redactText("registered-value-0")).toBe("registered-value-0");
    expect(redactText("registered-value-2999")).toBe("[REDACTED]");
    a.close();
    expect(redactText("a: tenant-a-value-4999.")).toBe("a: tenant-a-value-4999.");
    expect(redactText("token tenant-b-token-0123")).toBe("token [REDACTED]");
    b.set("credentials", ["tenant-b-token-rotated"]);
    expect(redactText("tenant-b-token-0123")).toBe("tenant-b-token-0123");
    b.close();
  });

  it("hides a scope's short values as whole words, only in texts written inside it", () => {
    const scope = new RedactionScope();
    scope.set("credentials", ["x7Kq2p", "abc"]);
    expect(scope.run(() => redactText("token x7Kq2p refused (x7Kq2pz, abc)"))).toBe(
      "token [REDACTED] refused (x7Kq2pz, abc)",
    );
    expect(redactText("token x7Kq2p refused")).toBe("token x7Kq2p refused");
    scope.close();
    expect(scope.run(() => redactText("token x7Kq2p"))).toBe("token x7Kq2p");
  });

  it("holds bootstrap data for the scope it runs in, and merges overlapping values", async () => {
    const scope = new RedactionScope();
    await scope.run(async () => {
      await Promise.resolve();
      holdSecret("bootstrap-token-abcdef");
    });
    scope.set("credentials", ["token-abcdef-suffix"]);
    expect(redactText("x bootstrap-token-abcdef-suffix y")).toBe("x [REDACTED] y");
    scope.close();
    expect(redactText("bootstrap-token-abcdef")).toBe("bootstrap-token-abcdef");
  });
});
