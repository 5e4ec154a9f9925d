// What a driver answers is checked before the kit acts on it, and what a cloud or a tenant wrote
// reaches a condition or an Event cleaned and cut: the kit over the API server, with a driver that
// lies in the ways a real cloud query does (one ID for thousands of instances, control and bidi
// characters, error texts of any length).

import { setCondition } from "@capi-ts/sdk/conditions";
import { PatchHelper } from "@capi-ts/sdk/patch";
import { PoolConditionTypes } from "@capi-ts/sdk/provider";
import { EventResource } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  KitMachinePool,
  MachinePools,
  ns,
  type Obj,
  Pools,
  sleep,
  startBed,
} from "./support.js";

type Group = NonNullable<Awaited<ReturnType<Bed["driver"]["getGroup"]>>>;

let bed: Bed;
/** Per pool name: what the driver's `getGroup` answers instead of the cloud's own list. */
const answers = new Map<string, (group: Group) => Group>();
/** Per pool name: what `getGroup` throws instead of answering. */
const failures = new Map<string, () => unknown>();
/** Per pool name: the last group the cloud answered (before any override). */
const lastGroups = new Map<string, Group>();
/** Per pool name: `getGroup` calls. */
const calls = new Map<string, number>();

beforeAll(async () => {
  bed = await startBed({
    controller: { readiness: "instance" },
    wrapDriver: (driver) => ({
      ...driver,
      classifyError(error) {
        // As a driver maps a cloud's `Retry-After` header, whatever it says.
        if (error instanceof Throttle) {
          return {
            kind: "throttled",
            reason: "CloudThrottling",
            message: "slow down",
            retryAfterMs: error.retryAfterMs,
          };
        }
        return driver.classifyError?.(error);
      },
      async getGroup(ctx) {
        calls.set(ctx.pool.name, (calls.get(ctx.pool.name) ?? 0) + 1);
        const fail = failures.get(ctx.pool.name);
        if (fail) throw fail();
        const group = await driver.getGroup(ctx);
        if (group) lastGroups.set(ctx.pool.name, group);
        const answer = answers.get(ctx.pool.name);
        return group && answer ? answer(group) : group;
      },
    }),
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

class Throttle extends Error {
  constructor(readonly retryAfterMs: number) {
    super("429 Too Many Requests");
  }
}

const ESC = "\u001b";
const RLO = "\u202e";

async function eventsOf(name: string) {
  const list = await bed.client.list(EventResource, { namespace: ns });
  return list.items.filter((e) => e.involvedObject?.name === name);
}

/** Control or format characters a terminal would act on. */
const UNSAFE = /[\p{Cc}\p{Cf}]/u;

describe("machinePoolController: cloud answers", { timeout: scaled(60_000) }, () => {
  it("names a few of 5,000 instances sharing one providerID, with a count, in a condition that fits", async () => {
    const name = await createPool(bed, { replicas: 1 });
    const pool = await converged(bed, name, 1);
    const id = pool.spec?.providerIDList?.[0] as string;
    answers.set(name, (group) => ({
      ...group,
      instances: [
        ...group.instances,
        ...Array.from({ length: 5000 }, (_, i) => ({
          ...(group.instances[0] as Group["instances"][number]),
          // An ID with an ANSI escape and a newline: it must reach no condition or Event as such.
          id: i === 0 ? `i-${ESC}[2J${RLO}evil\nforged` : `i-dup-${String(i).padStart(5, "0")}`,
          providerID: id,
        })),
      ],
    }));
    try {
      const ready = await eventually(async () => {
        const ready = condition(await getPool(bed, name), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "DuplicateProviderIDs" });
        return ready;
      });
      const message = ready?.message ?? "";
      expect(message.length).toBeLessThanOrEqual(10_240);
      expect(message).toContain("5001 instances report");
      expect(message).not.toMatch(UNSAFE);
      // Named escaped: a reader sees the characters are there, and they do nothing.
      expect(message).toContain("i-\\u{001b}[2J\\u{202e}evil\\u{000a}forged");
      const event = await eventually(async () => {
        const found = (await eventsOf(name)).find((e) => e.reason === "DuplicateProviderIDs");
        expect(found).toBeDefined();
        return found;
      });
      expect(event?.message?.length).toBeLessThanOrEqual(1024);
      expect(event?.message).not.toMatch(UNSAFE);
    } finally {
      answers.delete(name);
    }
    await converged(bed, name, 1);
  });

  it("refuses a providerID with a bidi override or a zero-width character instead of publishing it", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    for (const bad of [`fake:///evil${RLO}1`, "fake:///zero\u200bwidth"]) {
      answers.set(name, (group) => ({
        ...group,
        instances: [
          ...group.instances,
          { ...(group.instances[0] as Group["instances"][number]), id: "i-bad", providerID: bad },
        ],
      }));
      const ready = await eventually(async () => {
        const ready = condition(await getPool(bed, name), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "InvalidProviderID" });
        return ready;
      });
      expect(ready?.message).toContain("i-bad");
      expect(ready?.message).not.toMatch(UNSAFE);
      expect((await getPool(bed, name)).spec?.providerIDList).not.toContain(bad);
    }
    answers.delete(name);
    await converged(bed, name, 1);
  });

  it("writes Ready for a driver error of 100,000 characters with escapes: cleaned, cut, marked", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    failures.set(name, () => new Error(`${ESC}[31mboom${RLO}\n${"x".repeat(100_000)}`));
    try {
      const ready = await eventually(async () => {
        const ready = condition(await getPool(bed, name), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "CloudError" });
        return ready;
      });
      expect(ready?.message).not.toMatch(UNSAFE);
      expect(ready?.message).toMatch(/… \(\d+ more characters\)$/);
    } finally {
      failures.delete(name);
    }
    await converged(bed, name, 1);
  });

  it("writes GroupNotFound for a 40 KB group-created record without quoting it", async () => {
    const name = "lost-record";
    await bed.client.create(Pools, {
      apiVersion: KitMachinePool.apiVersion,
      kind: KitMachinePool.kind,
      metadata: {
        name,
        namespace: ns,
        annotations: { "capi-ts.io/group-created": `g${"9".repeat(40_000)}` },
      },
      spec: { instanceType: "small", minSize: 0, maxSize: 3 },
    } as Obj);
    await bed.client.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name, namespace: ns },
      spec: {
        clusterName: "c1",
        replicas: 1,
        template: {
          spec: {
            clusterName: "c1",
            version: "v1.34.1",
            bootstrap: {},
            infrastructureRef: {
              apiGroup: "infrastructure.cluster.x-k8s.io",
              kind: KitMachinePool.kind,
              name,
            },
          },
        },
      },
    } as Obj);
    const ready = await eventually(async () => {
      const ready = condition(await getPool(bed, name), "Ready");
      expect(ready).toMatchObject({ status: "False", reason: "GroupNotFound" });
      return ready;
    });
    expect(ready?.message.length).toBeLessThan(1024);
    expect(ready?.message).toContain("40001 characters");
  });

  for (const hint of [0, -1, Number.NaN]) {
    it(`backs off a pool the cloud throttles with retryAfterMs ${hint}, and says so on Ready`, async () => {
      const name = await createPool(bed, { replicas: 1 });
      await converged(bed, name, 1);
      failures.set(name, () => new Throttle(hint));
      try {
        calls.set(name, 0);
        // The 1 s floor, and the pool's own backoff on top of it: a handful of calls, not thousands.
        await sleep(3000);
        expect(calls.get(name)).toBeLessThanOrEqual(5);
        await eventually(async () => {
          expect(condition(await getPool(bed, name), "Ready")).toMatchObject({
            status: "False",
            reason: "CloudThrottling",
          });
        });
      } finally {
        failures.delete(name);
      }
      await converged(bed, name, 1);
    });
  }

  it("refuses another pool's instance in a pool's answer: not published, no Node action, never deleted", async () => {
    const a = await createPool(bed, { replicas: 1 });
    const b = await createPool(bed, { replicas: 1 });
    await converged(bed, a, 1);
    const poolB = await converged(bed, b, 1);
    const stolen = lastGroups.get(b)?.instances[0] as Group["instances"][number];
    expect(poolB.spec?.providerIDList).toEqual([stolen.providerID]);
    const mark = bed.cloud.lastCallSeq();
    // A's cloud query matches too much: it also returns B's instance.
    answers.set(a, (group) => ({ ...group, instances: [...group.instances, stolen] }));
    try {
      const ready = await eventually(async () => {
        const ready = condition(await getPool(bed, a), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "ProviderIDOfOtherPool" });
        return ready;
      });
      expect(ready?.message).toContain(`KitMachinePool ${ns}/${a}`);
      expect(ready?.message).toContain(`KitMachinePool ${ns}/${b}`);
      // A few more reconciles of A: still nothing of B's reaches A or the cloud.
      await sleep(1000);
      expect((await getPool(bed, a)).spec?.providerIDList).not.toContain(stolen.providerID);
      const mutating = bed.cloud.calls({ afterSeq: mark, mutating: true });
      expect(mutating.filter((c) => JSON.stringify(c.args).includes(stolen.id))).toEqual([]);
      expect(bed.cloud.inspect.providerIds(groupName(b))).toEqual([stolen.providerID]);
    } finally {
      answers.delete(a);
    }
    await converged(bed, a, 1);
    await converged(bed, b, 1);
  });

  it("writes every condition type the kit owns with a 40,000-character message: the status patch succeeds", async () => {
    const name = "no-owner-yet";
    // No MachinePool: the kit waits for core and writes nothing, so the test's writes stay.
    await bed.client.create(Pools, {
      apiVersion: KitMachinePool.apiVersion,
      kind: KitMachinePool.kind,
      metadata: { name, namespace: ns },
      spec: { instanceType: "small", minSize: 0, maxSize: 3 },
    } as Obj);
    const pool = await getPool(bed, name);
    const patch = PatchHelper.snapshot(pool, { resource: Pools });
    const types = ["Ready", "Paused", ...Object.values(PoolConditionTypes)];
    for (const type of types) {
      setCondition(pool, { type, status: "False", reason: "Long", message: "y".repeat(40_000) });
    }
    await patch.apply(bed.client, pool, { ownedConditions: types });
    const stored = await getPool(bed, name);
    for (const type of types) {
      const message = condition(stored, type)?.message ?? "";
      expect(message.length).toBeLessThanOrEqual(10_240);
      expect(message).toMatch(/y… \(\d+ more characters\)$/);
    }
  });
});
