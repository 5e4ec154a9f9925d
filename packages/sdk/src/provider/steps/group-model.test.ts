// The model-in-group driver shape (Azure VMSS, GCE MIG set in place): no template versions, the stamp
// on the group's model, per-instance latestModel. A fake scope and driver, no API server.
import { describe, expect, it } from "vitest";
import type {
  GroupModelPoolDriver,
  GroupUpdate,
  PoolGroup,
  PoolInstance,
  TemplateStamp,
} from "../driver.js";
import { PoolMemory } from "../memory.js";
import { defaultPoolPhases, runPhases } from "../pipeline.js";
import { type FakeSettings, type FakeSpec, fakeScope } from "../testing.js";
import { checkDriverModel } from "./driver-shape.js";

interface ScaleSet {
  group: PoolGroup<FakeSettings> | undefined;
  modelGeneration: number;
  calls: { op: string; arg?: unknown }[];
  seq: number;
}

/** A scale set: the model (with its stamp) is in the group; instances say if they run it. */
function fakeScaleSet(options: { storeStamp?: boolean } = {}) {
  const set: ScaleSet = { group: undefined, modelGeneration: 0, calls: [], seq: 0 };
  const storeStamp = options.storeStamp ?? true;
  const launch = (): PoolInstance & { generation: number } => {
    const id = `vm-${++set.seq}`;
    return {
      id,
      providerID: `azure:///vmss/${id}`,
      state: "running",
      templateVersion: undefined,
      createdAt: set.seq,
      latestModel: true,
      generation: set.modelGeneration,
    };
  };
  const setModel = (stamp: TemplateStamp) => {
    set.modelGeneration++;
    if (!set.group) return;
    set.group = {
      ...set.group,
      ...(storeStamp ? { modelStamp: stamp } : {}),
      instances: set.group.instances.map((i) => ({ ...i, latestModel: false })),
    };
  };
  const driver: GroupModelPoolDriver<FakeSpec, FakeSettings> = {
    model: "group",
    templateInputs: (ctx) => ({ image: ctx.spec.image }),
    groupSettings: (ctx) => ({ maxSize: ctx.spec.maxSize ?? 10 }),
    async getGroup() {
      set.calls.push({ op: "getGroup" });
      return set.group;
    },
    async createGroup(_ctx, intent) {
      set.calls.push({ op: "createGroup", arg: intent });
      set.group = {
        id: "vmss-1",
        status: "active",
        desiredReplicas: intent.replicas ?? 0,
        templateVersion: undefined,
        settings: intent.settings,
        instances: [],
        ...(storeStamp && intent.model ? { modelStamp: intent.model.stamp } : {}),
      };
    },
    async updateGroup(_ctx, update: GroupUpdate<FakeSettings>) {
      set.calls.push({ op: "updateGroup", arg: update });
      if (update.model) setModel(update.model.stamp);
      if (set.group && update.replicas !== undefined) {
        set.group = { ...set.group, desiredReplicas: update.replicas };
      }
    },
    async deleteGroup() {
      set.calls.push({ op: "deleteGroup" });
      set.group = undefined;
    },
    async deleteInstance(_ctx, instance, mode) {
      set.calls.push({ op: "deleteInstance", arg: [instance.id, mode] });
      if (!set.group) return;
      set.group = {
        ...set.group,
        desiredReplicas: set.group.desiredReplicas - (mode === "shrink" ? 1 : 0),
        instances: set.group.instances.filter((i) => i.id !== instance.id),
      };
    },
  };
  /** The cloud fills the group up to its desired size with instances on the latest model. */
  const settle = () => {
    if (!set.group) return;
    const instances = [...set.group.instances];
    while (instances.length < set.group.desiredReplicas) instances.push(launch());
    set.group = { ...set.group, instances };
  };
  const mutating = () => set.calls.filter((c) => c.op !== "getGroup");
  return { set, driver, settle, mutating };
}

const pipeline = defaultPoolPhases<FakeSpec, FakeSettings>();

async function reconcile(
  driver: GroupModelPoolDriver<FakeSpec, FakeSettings>,
  memory: PoolMemory,
  extra: Parameters<typeof fakeScope>[0] = {},
) {
  const bed = fakeScope({ driver, memory, ...extra });
  return { ...bed, result: await runPhases(pipeline, bed.scope) };
}

describe("model-in-group drivers", () => {
  it("create the group with the model and its stamp, and never call a template method", async () => {
    const cloud = fakeScaleSet();
    const memory = new PoolMemory();
    const first = await reconcile(cloud.driver, memory, {
      bootstrapData: { value: "#cloud-config\nA" },
    });
    expect(first.result.ready.reason).toBe("Provisioning");
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createGroup"]);
    const intent = cloud.mutating()[0]?.arg as { model?: { userData: string; stamp: unknown } };
    expect(intent.model?.userData).toBe("#cloud-config\nA");
    expect(intent.model?.stamp).toEqual(cloud.set.group?.modelStamp);
    cloud.settle();
    const second = await reconcile(cloud.driver, memory, {
      bootstrapData: { value: "#cloud-config\nA" },
    });
    expect(second.result.ready).toEqual({ status: "True", reason: "Ready", message: "" });
    expect(cloud.mutating()).toHaveLength(1);
  });

  it("roll instances that do not run the latest model after a spec change, with one model update", async () => {
    const cloud = fakeScaleSet();
    const memory = new PoolMemory();
    await reconcile(cloud.driver, memory);
    cloud.settle();
    await reconcile(cloud.driver, memory);
    const before = cloud.set.group?.instances.map((i) => i.id) ?? [];
    let rounds = 0;
    for (; rounds < 12; rounds++) {
      const run = await reconcile(cloud.driver, memory, { spec: { image: "img-2" } });
      cloud.settle();
      if (run.result.ready.status === "True") break;
    }
    const after = cloud.set.group?.instances.map((i) => i.id) ?? [];
    expect(after.some((id) => before.includes(id))).toBe(false);
    expect(cloud.set.group?.instances.every((i) => i.latestModel)).toBe(true);
    expect(
      cloud
        .mutating()
        .filter((c) => c.op === "updateGroup" && (c.arg as GroupUpdate<unknown>).model),
    ).toHaveLength(1);
    expect(rounds).toBeLessThan(12);
  });

  it("keep every instance on a token-only change, though they report latestModel false", async () => {
    const cloud = fakeScaleSet();
    const memory = new PoolMemory();
    await reconcile(cloud.driver, memory, { bootstrapData: { value: "token-1" } });
    cloud.settle();
    await reconcile(cloud.driver, memory, { bootstrapData: { value: "token-1" } });
    const run = await reconcile(cloud.driver, memory, { bootstrapData: { value: "token-2" } });
    expect(run.events.map((e) => e.reason)).toContain("GroupModelUpdated");
    expect(cloud.set.group?.instances.every((i) => i.latestModel === false)).toBe(true);
    const again = await reconcile(cloud.driver, memory, { bootstrapData: { value: "token-2" } });
    expect(again.result.ready.status).toBe("True");
    expect(cloud.mutating().filter((c) => c.op === "deleteInstance")).toEqual([]);
  });

  it("stop with ModelStampNotStored when the model's stamp is never reported back", async () => {
    const cloud = fakeScaleSet({ storeStamp: false });
    const memory = new PoolMemory();
    let last = await reconcile(cloud.driver, memory);
    cloud.settle();
    for (let i = 0; i < 6; i++) last = await reconcile(cloud.driver, memory);
    expect(last.result.ready.reason).toBe("ModelStampNotStored");
    const updates = cloud
      .mutating()
      .filter((c) => c.op === "updateGroup" && (c.arg as GroupUpdate<unknown>).model);
    expect(updates).toHaveLength(2);
  });

  it("change nothing while an instance does not say whether it runs the latest model", async () => {
    const cloud = fakeScaleSet();
    const memory = new PoolMemory();
    await reconcile(cloud.driver, memory);
    cloud.settle();
    const group = cloud.set.group as PoolGroup<FakeSettings>;
    cloud.set.group = {
      ...group,
      instances: group.instances.map(({ latestModel: _l, ...i }) => i),
    };
    const calls = cloud.mutating().length;
    const run = await reconcile(cloud.driver, memory, { spec: { image: "img-2" } });
    expect(run.result.ready.reason).toBe("InstanceModelUnknown");
    expect(cloud.mutating()).toHaveLength(calls);
  });

  it("never cancel the cloud's rolling upgrade as stale (it moves to the group's current model)", async () => {
    const cloud = fakeScaleSet();
    const rollout: string[] = [];
    const driver: GroupModelPoolDriver<FakeSpec, FakeSettings> = {
      ...cloud.driver,
      nativeRollout: {
        start: async () => void rollout.push("start"),
        get: async () => {
          rollout.push("get");
          return { id: "upgrade-1", state: "running", startedWithVersion: "cloud-model-7" };
        },
        cancel: async () => void rollout.push("cancel"),
      },
    };
    const memory = new PoolMemory();
    await reconcile(driver, memory);
    cloud.settle();
    await reconcile(driver, memory);
    const run = await reconcile(driver, memory, { spec: { image: "img-2" } });
    expect(run.result.ready.reason).toBe("RollingOut");
    expect(rollout).toEqual(["get"]);
  });

  it("are checked when the controller is built: a template driver needs its template methods", () => {
    const { driver } = fakeScaleSet();
    expect(() => checkDriverModel(driver)).not.toThrow();
    const { model: _model, ...withoutModel } = driver;
    expect(() => checkDriverModel(withoutModel as never)).toThrow(
      /lacks getTemplate, createTemplateVersion, deleteTemplate; implement them, or set model: "group"/,
    );
  });
});
