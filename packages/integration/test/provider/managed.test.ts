import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  converged,
  createPool,
  getMachinePool,
  groupName,
  MachinePools,
  ns,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({ controller: { bootstrapData: "none" }, checkTokens: false });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe('machinePoolController with bootstrapData: "none" (managed pools)', {
  timeout: 40_000,
}, () => {
  it("provisions without waiting for bootstrap data and stamps an empty payload", async () => {
    // A managed pool's MachinePool names no bootstrap data: dataSecretName "" (cluster-api#12178).
    const name = await createPool(bed, { replicas: 2 });
    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { spec: { template: { spec: { bootstrap: { dataSecretName: "" } } } } },
    );
    await converged(bed, name, 2);
    const template = bed.cloud.inspect.templates().find((t) => t.name === groupName(name));
    expect(template?.userData[template.latestVersion]).toBe("");
    const mp = await getMachinePool(bed, name);
    expect(mp.spec?.replicas).toBe(2);
  });
});
