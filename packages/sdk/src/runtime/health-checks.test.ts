import { describe, expect, it } from "vitest";
import { type HealthCheck, runHealthChecks } from "./health-checks.js";

describe("runHealthChecks", () => {
  it("passes when every check passes, one line each, in order", async () => {
    const checks = new Map<string, HealthCheck>([
      ["ping", () => undefined],
      ["informers", async () => undefined],
    ]);
    await expect(runHealthChecks(checks)).resolves.toEqual({
      ok: true,
      report: "[+]ping ok\n[+]informers ok\ncheck passed\n",
    });
  });

  it("fails with the string a check resolves and the message of one that throws", async () => {
    const checks = new Map<string, HealthCheck>([
      ["ping", () => undefined],
      ["informers", async () => "2 caches not synced"],
      [
        "leader",
        () => {
          throw new Error("lease lost");
        },
      ],
    ]);
    await expect(runHealthChecks(checks)).resolves.toEqual({
      ok: false,
      report:
        "[+]ping ok\n[-]informers failed: 2 caches not synced\n[-]leader failed: lease lost\ncheck failed\n",
    });
  });

  it("passes with no checks at all", async () => {
    await expect(runHealthChecks(new Map())).resolves.toEqual({
      ok: true,
      report: "check passed\n",
    });
  });
});
