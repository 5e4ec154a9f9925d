// The example provider with the kit's defaults — only a poll interval set — on a cloud that throttles
// 2 % of all calls at random and whose Nodes join 500 ms after their instance runs, passes the whole
// suite, `templateRollout` included (the named scenario `nodesJoinLate` checks the same with the join
// delay set through the cloud's actor, for every provider): the default `readiness: "node"` reads the
// workload cluster's Nodes through its kubeconfig Secret, so a rollout never takes Ready Nodes below
// replicas − maxUnavailable (with `readiness: "instance"` they dropped to 2 of 3).
import { fakeCloudConformance } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

runMachinePoolConformance(
  fakeCloudConformance({
    // speed 40: 20,000 cloud ms is 500 ms of wall time.
    cloud: { randomFaults: { throttleRate: 0.02, retryAfterMs: 500 }, timing: { joinMs: 20_000 } },
    controller: { pollIntervalMs: 50, resyncPeriodMs: undefined, readiness: undefined },
    suite: {
      name: "FakeCloudMachinePool (kit defaults, 2% throttling, 500 ms Node join delay)",
    },
  }),
);
