// The example provider with the kit's defaults — only a poll interval set — on a cloud that throttles
// 2 % of all calls at random and whose Nodes join 500 ms after their instance runs, passes the suite.
//
// Except `templateRollout`, left out on purpose and named here so it is not forgotten: with the
// default `readiness: "instance"`, a rollout deletes old instances before the new Nodes are Ready
// (Ready Nodes drop to 2 of 3). The fix is Node-aware readiness through the workload cluster, which
// is issue #13; when it lands, drop the filter below and this file is its acceptance test.
import { fakeCloudConformance } from "../../../examples/src/provider/index.js";
import { CONFORMANCE_SCENARIOS } from "../../src/index.js";
import { runMachinePoolConformance } from "../../src/vitest.js";

runMachinePoolConformance(
  fakeCloudConformance({
    // speed 40: 20,000 cloud ms is 500 ms of wall time.
    cloud: { randomFaults: { throttleRate: 0.02, retryAfterMs: 500 }, timing: { joinMs: 20_000 } },
    controller: { pollIntervalMs: 50, resyncPeriodMs: undefined, readiness: undefined },
    suite: {
      name: "FakeCloudMachinePool (kit defaults, 2% throttling, 500 ms Node join delay)",
      scenarios: CONFORMANCE_SCENARIOS.map((s) => s.id).filter((id) => id !== "templateRollout"),
    },
  }),
);
