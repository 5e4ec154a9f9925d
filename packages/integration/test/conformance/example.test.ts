// The example provider (FakeCloudMachinePool on the provider kit) passes the conformance suite.
import { fakeCloudConformance } from "../../../examples/src/provider/index.js";
import { runMachinePoolConformance } from "../../src/vitest.js";

runMachinePoolConformance(fakeCloudConformance());
