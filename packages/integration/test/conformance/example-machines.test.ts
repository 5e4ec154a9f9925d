// The example provider with MachinePool Machines on (one FakeCloudMachinePoolMachine per instance,
// deletions through core's Machines) passes the whole conformance suite, the MachinePool Machines
// scenarios included, on the core emulator.
import { fakeCloudConformance } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

runMachinePoolConformance(fakeCloudConformance({ machinePoolMachines: true }));
