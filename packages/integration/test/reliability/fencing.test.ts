// Fencing of the provider kit (issue findings 1 and 2): a leader that cannot prove it still holds
// its lease, or whose shutdown deadline passed, makes no further cloud call, and the lease is handed
// over only once its in-flight work has stopped.

import { LeaderElectionLostError, LeaseResource } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterEach, describe, expect, it } from "vitest";
import {
  type Bed,
  converged,
  createPool,
  eventually,
  groupName,
  MANAGER,
  ns,
  setReplicas,
  sleep,
  startBed,
} from "../provider/support.js";

const leaderElection = {
  namespace: ns,
  leaseDurationMs: 1500,
  renewDeadlineMs: 1000,
  retryPeriodMs: 200,
};

/** Blocks this whole process (event loop, timers, sockets), as a long GC pause or a frozen VM does. */
function freezeProcess(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

let bed: Bed | undefined;
afterEach(async () => {
  await bed?.stop();
  bed = undefined;
});

describe("fencing", { timeout: scaled(60_000) }, () => {
  it("a leader frozen past its lease makes no cloud call when it runs again, and start() rejects", async () => {
    let freezeAfterRead: string | undefined;
    bed = await startBed({
      manager: { leaderElection },
      wrapDriver: (driver) => ({
        ...driver,
        async getGroup(ctx) {
          const group = await driver.getGroup(ctx);
          if (freezeAfterRead === ctx.pool.name) {
            freezeAfterRead = undefined;
            freezeProcess(2500);
          }
          return group;
        },
      }),
    });
    const current = bed;
    const name = await createPool(current, { replicas: 2 });
    await converged(current, name, 2);
    const running = current.manager.start();
    const mark = current.cloud.lastCallSeq();
    freezeAfterRead = name;
    await setReplicas(current, name, 4);
    await expect(running).rejects.toBeInstanceOf(LeaderElectionLostError);
    await sleep(500);
    expect(freezeAfterRead).toBeUndefined();
    const mutations = current.cloud
      .calls({ afterSeq: mark, mutating: true })
      .filter((call) => JSON.stringify(call.args).includes(groupName(name)));
    expect(mutations).toEqual([]);
    expect(current.manager.isLeader()).toBe(false);
  });

  it("on shutdown the aborted reconcile makes no cloud call after the deadline, and the lease is released only after its call returned", async () => {
    let slowRead: string | undefined;
    let readReturnedAt = 0;
    bed = await startBed({
      manager: { leaderElection, gracefulShutdownTimeoutMs: 300 },
      wrapDriver: (driver) => ({
        ...driver,
        async getGroup(ctx) {
          const group = await driver.getGroup(ctx);
          if (slowRead === ctx.pool.name) {
            slowRead = undefined;
            // A slow cloud call that ignores the signal, as a careless SDK call does.
            await sleep(1500);
            readReturnedAt = performance.now();
          }
          return group;
        },
      }),
    });
    const current = bed;
    const name = await createPool(current, { replicas: 1 });
    await converged(current, name, 1);
    slowRead = name;
    await setReplicas(current, name, 3);
    await eventually(() => {
      if (slowRead !== undefined) throw new Error("the slow read has not started");
    });
    const mark = current.cloud.lastCallSeq();
    const stopped = current.manager.stop();
    let releasedAt = 0;
    const lease = { namespace: ns, name: `${MANAGER}-leader-election` };
    while (releasedAt === 0) {
      const object = (await current.client.get(LeaseResource, lease)) as {
        spec?: { holderIdentity?: string };
      };
      if (!object.spec?.holderIdentity) releasedAt = performance.now();
      else await sleep(20);
    }
    await stopped;
    expect(readReturnedAt).toBeGreaterThan(0);
    expect(releasedAt).toBeGreaterThanOrEqual(readReturnedAt);
    const mutations = current.cloud
      .calls({ afterSeq: mark, mutating: true })
      .filter((call) => JSON.stringify(call.args).includes(groupName(name)));
    expect(mutations).toEqual([]);
  });
});
