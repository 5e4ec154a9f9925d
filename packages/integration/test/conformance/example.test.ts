// The example provider (FakeCloudMachinePool on the provider kit) passes the conformance suite.
import { fakeCloudConformance } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

runMachinePoolConformance(fakeCloudConformance());
