// The EventRecorder's correlator (client-go's): repeats and similar events aggregated, a spam filter
// per object; checked on the Events the in-memory API server stores.
import { EventRecorder, EventResource, KubeClient, ManualClock } from "@capi-ts/sdk/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";

const pool = {
  apiVersion: "infrastructure.foo.com/v1beta2",
  kind: "FooMachinePool",
  metadata: { name: "pool-a", namespace: "default", uid: "uid-a" },
};

describe("EventRecorder", () => {
  let api: ApiServer;
  let client: KubeClient;
  let clock: ManualClock;
  let recorder: EventRecorder;
  beforeEach(async () => {
    api = await startApiServer();
    client = new KubeClient(api.kubeConfig);
    clock = new ManualClock();
    recorder = new EventRecorder(client, { component: "foo", clock });
  });
  afterEach(async () => {
    await api.stop();
  });
  const events = async () =>
    (await client.list(EventResource, { namespace: "default" })).items.map((e) => ({
      reason: e.reason,
      message: e.message,
      count: e.count,
    }));

  it("counts repeats on one Event", async () => {
    for (let i = 0; i < 3; i++) recorder.event(pool, "Warning", "CloudError", "quota exceeded");
    await recorder.flush();
    expect(await events()).toEqual([{ reason: "CloudError", message: "quota exceeded", count: 3 }]);
  });

  it("combines similar events beyond 10 distinct messages in 10 minutes, showing the latest", async () => {
    for (let i = 1; i <= 14; i++) {
      recorder.event(pool, "Normal", "InstanceDeleted", `removing instance i-${i}`);
      clock.advance(1_000);
    }
    await recorder.flush();
    const stored = await events();
    expect(stored).toHaveLength(11);
    expect(stored).toContainEqual({
      reason: "InstanceDeleted",
      message: "(combined from similar events): removing instance i-14",
      count: 4,
    });
    // After the window, messages are told apart again.
    clock.advance(11 * 60_000);
    recorder.event(pool, "Normal", "InstanceDeleted", "removing instance i-15");
    await recorder.flush();
    expect(await events()).toContainEqual({
      reason: "InstanceDeleted",
      message: "removing instance i-15",
      count: 1,
    });
  });

  it("drops events of one object beyond a burst of 25, then admits one per 5 minutes", async () => {
    for (let i = 0; i < 30; i++) recorder.event(pool, "Normal", `Reason${i}`, "m");
    await recorder.flush();
    expect(await events()).toHaveLength(25);
    // Another object has its own budget.
    recorder.event(
      { ...pool, metadata: { ...pool.metadata, name: "pool-b", uid: "uid-b" } },
      "Normal",
      "R",
      "m",
    );
    clock.advance(5 * 60_000);
    recorder.event(pool, "Normal", "Later", "m");
    recorder.event(pool, "Normal", "TooSoon", "m");
    await recorder.flush();
    const reasons = (await events()).map((e) => e.reason);
    expect(reasons).toHaveLength(27);
    expect(reasons).toContain("Later");
    expect(reasons).not.toContain("TooSoon");
  });
});
