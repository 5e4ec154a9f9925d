import { Manager, type ManagerOptions } from "@capi-ts/sdk";
import { LeaseResource } from "@capi-ts/sdk/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { eventually, GadgetResource, gadget, gadgetCrd, sleep } from "./support.js";

let api: ApiServer;
const managers: Manager[] = [];

beforeEach(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.stop()));
  await api.stop();
});

const LEASE = { leaseDurationMs: 1200, renewDeadlineMs: 800, retryPeriodMs: 100 };

interface Span {
  who: string;
  key: string;
  start: number;
  end: number;
}

function candidate(
  identity: string,
  spans: Span[],
  options: Partial<ManagerOptions> = {},
): Manager {
  const manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "gadget-provider",
    logger: { level: "silent" },
    gracefulShutdownTimeoutMs: 5000,
    leaderElection: { namespace: "default", identity, ...LEASE },
    ...options,
  });
  managers.push(manager);
  manager
    .controller("gadgets")
    .for(GadgetResource)
    .complete(async (request) => {
      const start = performance.now();
      await sleep(20);
      spans.push({ who: identity, key: request.name, start, end: performance.now() });
    });
  return manager;
}

async function leaseSpec(): Promise<{ holderIdentity?: string; renewTime?: string } | undefined> {
  const lease = (await managers[0]?.client.get(LeaseResource, {
    namespace: "default",
    name: "gadget-provider-leader-election",
  })) as { spec?: { holderIdentity?: string; renewTime?: string } } | undefined;
  return lease?.spec;
}

async function holder(): Promise<string | undefined> {
  return (await leaseSpec())?.holderIdentity;
}

describe("leader election on a Lease", () => {
  it("lets only the leader reconcile; on release the standby takes over at once, without overlap", async () => {
    const spans: Span[] = [];
    const first = candidate("first", spans);
    void first.start();
    expect(await first.elected()).toBe(true);
    const second = candidate("second", spans);
    void second.start();
    await eventually(() => second.cache.hasSynced(), "standby caches synced (warm standby)");
    for (let i = 0; i < 10; i++) await first.client.create(GadgetResource, gadget(`early-${i}`, 1));
    await eventually(() => spans.length === 10, "leader reconciled");
    await sleep(300);
    expect(second.isLeader()).toBe(false);
    expect(new Set(spans.map((span) => span.who))).toEqual(new Set(["first"]));
    expect(await first.metrics.value("leader_election_master_status")).toBe(1);
    expect(await second.metrics.value("leader_election_master_status")).toBe(0);
    expect(await holder()).toBe("first");

    const stopAt = performance.now();
    await first.stop();
    expect(await second.elected()).toBe(true);
    const takeoverMs = performance.now() - stopAt;
    // Released, so no need to wait out the lease.
    expect(takeoverMs).toBeLessThan(LEASE.leaseDurationMs);
    expect(await holder()).toBe("second");
    for (let i = 0; i < 10; i++) await second.client.create(GadgetResource, gadget(`late-${i}`, 1));
    await eventually(
      () => spans.filter((span) => span.key.startsWith("late")).length === 10,
      "new leader reconciled",
    );
    const lastOfFirst = Math.max(
      ...spans.filter((span) => span.who === "first").map((span) => span.end),
    );
    const firstOfSecond = Math.min(
      ...spans.filter((span) => span.who === "second").map((span) => span.start),
    );
    expect(firstOfSecond).toBeGreaterThan(lastOfFirst);
    expect(
      spans.filter((span) => span.key.startsWith("late")).every((span) => span.who === "second"),
    ).toBe(true);
  });

  it("takes over after the lease expires when the leader vanishes without releasing", async () => {
    const spans: Span[] = [];
    const first = candidate("crashy", spans, {
      leaderElection: {
        namespace: "default",
        identity: "crashy",
        releaseOnCancel: false,
        ...LEASE,
      },
    });
    void first.start();
    await first.elected();
    const second = candidate("patient", spans);
    void second.start();
    await eventually(() => second.cache.hasSynced(), "standby synced");
    await first.stop();
    // The lease is not released: the standby may take over only once it expires, counted from the
    // last renewal the crashed leader wrote (on a starved machine that can be well before stop()).
    const last = await leaseSpec();
    expect(last?.holderIdentity).toBe("crashy");
    const lastRenew = Date.parse(last?.renewTime ?? "");
    expect(await second.elected()).toBe(true);
    const takeoverMs = Date.now() - lastRenew;
    expect(takeoverMs).toBeGreaterThanOrEqual(LEASE.leaseDurationMs - 200);
    expect(takeoverMs).toBeLessThan(LEASE.leaseDurationMs * 3 + 2_000);
    expect(await holder()).toBe("patient");
  });

  it("stops reconciling when the lease cannot be renewed before the deadline", async () => {
    const spans: Span[] = [];
    const leader = candidate("isolated", spans);
    const started = leader.start();
    await leader.elected();
    // The leader loses the API server for the leases only (a partition).
    api.faults.add({ resource: "leases", status: 503 });
    await expect(started).rejects.toThrow(/leader election lost/);
    expect(leader.isLeader()).toBe(false);
    expect(await leader.metrics.value("leader_election_master_status")).toBe(0);
  });
});
