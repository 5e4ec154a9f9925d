import { Manager } from "@capi-ts/sdk";
import type { ReconcileRequest } from "@capi-ts/sdk/runtime";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { eventually, GadgetResource, gadget, gadgetCrd, sleep } from "../runtime/support.js";

let api: ApiServer;
let manager: Manager | undefined;

beforeEach(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
});
afterEach(async () => {
  await manager?.stop();
  await api.stop();
});

// Finding 10: an update event enqueued the key for the new and the old object; when a worker was idle
// the first add was handed out at once and the second came back as a second reconcile.
it("one update event gives one reconcile: 20 updates, at most 20 reconciles", async () => {
  manager = new Manager({ kubeConfig: api.kubeConfig, logger: { level: "silent" } });
  const seen: ReconcileRequest[] = [];
  manager
    .controller("gadgets")
    .for(GadgetResource)
    .complete(async (request) => {
      seen.push(request);
    });
  void manager.start();
  await manager.elected();
  const created = await manager.client.create(GadgetResource, gadget("one", 0));
  await eventually(() => seen.length >= 1, "the create reconciled");
  await sleep(100);
  seen.length = 0;
  let current = created;
  for (let size = 1; size <= 20; size++) {
    current = await manager.client.update(GadgetResource, {
      ...current,
      spec: { size },
    });
    await eventually(() => seen.length >= size, `update ${size} reconciled`);
    await sleep(20);
  }
  await sleep(200);
  expect(seen.length).toBeGreaterThanOrEqual(20);
  expect(seen.length).toBeLessThanOrEqual(20);
});
