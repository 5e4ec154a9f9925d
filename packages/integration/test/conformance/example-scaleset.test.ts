// The example provider on a cloud whose model lives in the group (the fake cloud's scale-set API,
// shaped like Azure VMSS: no template versions, per-VM latestModelApplied) passes the same suite.
import { fakeCloudConformance } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

runMachinePoolConformance(fakeCloudConformance({ shape: "scaleSet" }));
