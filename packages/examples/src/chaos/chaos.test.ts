// The chaos suite's short form, run by ./dev test (CI): two provider processes on one shared cloud, a
// leader frozen past its lease mid-reconcile, a leader killed mid-call, API server 5xx; every row must
// hold (§6.4 invariants, cloud mutations equal to a fault-free run's, one leader at a time by cloud
// effects, nothing leaked). `./dev chaos` runs every fault and prints the table.
import { describe, expect, it } from "vitest";
import { formatChaosTable, runChaos } from "./harness.js";

describe("chaos (short form)", () => {
  it("converges with exact cloud mutations, one leader at a time and no leak under SIGSTOP, SIGKILL and 5xx", async () => {
    const rows = await runChaos({
      faults: ["sigstop-past-lease", "sigkill-leader", "apiserver-5xx"],
      stepTimeoutMs: 30_000,
    });
    const table = formatChaosTable(rows);
    expect(rows.map((row) => row.fault.split(" ")[0])).toEqual([
      "none",
      "none",
      "sigstop-past-lease",
      "sigkill-leader",
      "apiserver-5xx",
      "delete",
    ]);
    for (const row of rows) {
      expect(row.violations, table).toEqual([]);
      expect(row.leaks, table).toBe(0);
      expect(row.mutations, table).toBeGreaterThan(0);
    }
    // The frozen and the killed leader were each replaced by another process.
    expect(rows[2]?.leaders.length, table).toBe(1);
    expect(rows[3]?.leaders.length, table).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
