// The phases before any cloud call (clusterInfrastructure, validateSpec, bootstrapData,
// desiredState) on a fake scope and the fake cloud: no API server, no timers.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Cluster } from "../../api/cluster.x-k8s.io/v1beta2.js";
import { ApiError } from "../../runtime/errors.js";
import { redactText } from "../../runtime/redact.js";
import { PoolMemory } from "../memory.js";
import type { BootstrapSection, PhaseResult, PoolPhase } from "../phase.js";
import { countedSinceRelease, inputsFingerprint } from "../runaway.js";
import type { PoolScope } from "../scope.js";
import { attachSections, runPhase, sectionsOf } from "../sections.js";
import { stableStringify, targetStamp } from "../stamp.js";
import {
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeScope,
  type TestScope,
} from "../testing.js";
import {
  bootstrapDataPhase,
  clusterInfrastructurePhase,
  desiredStatePhase,
  validateSpecPhase,
} from "./prerequisites.js";

type Test = TestScope<FakeSpec, FakeSettings>;

/** Runs `phase` on `test`'s scope with some of its objects replaced (the same sections and Events). */
function runWith(
  test: Test,
  overrides: Partial<Pick<PoolScope<FakeSpec, FakeSettings>, "machinePool" | "cluster">>,
  phase:
    | PoolPhase<unknown, unknown, never, never>
    | PoolPhase<unknown, unknown, never, "bootstrap">,
): Promise<PhaseResult | undefined> {
  const scope = { ...test.scope, ...overrides };
  attachSections(scope, sectionsOf(test.scope));
  return runPhase(phase as PoolPhase<FakeSpec, FakeSettings>, scope);
}

const BOOTSTRAP: BootstrapSection = {
  userData: "#cloud-config\n",
  format: "cloud-config",
  secretRef: "default/pool-1-bootstrap",
};

function clusterWith(status: Record<string, unknown>, apiVersion = "cluster.x-k8s.io/v1beta2") {
  return {
    apiVersion,
    kind: "Cluster",
    metadata: { namespace: "default", name: "c1" },
    spec: {},
    status,
  } as unknown as Cluster;
}

describe("clusterInfrastructure", () => {
  it("goes on once the Cluster's infrastructure is provisioned", async () => {
    const test = fakeScope();
    expect(await test.run(clusterInfrastructurePhase)).toBeUndefined();
  });

  it("waits, without a requeue, while the infrastructure is not provisioned", async () => {
    const test = fakeScope();
    const result = await runWith(test, { cluster: clusterWith({}) }, clusterInfrastructurePhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "WaitingForClusterInfrastructure",
        message: "Cluster c1 infrastructure is not provisioned yet",
      },
    });
  });

  it("reads a v1beta1 Cluster's infrastructureReady", async () => {
    const test = fakeScope();
    const v1beta1 = (ready: boolean) =>
      clusterWith({ infrastructureReady: ready }, "cluster.x-k8s.io/v1beta1");
    expect(
      (await runWith(test, { cluster: v1beta1(false) }, clusterInfrastructurePhase))?.ready.reason,
    ).toBe("WaitingForClusterInfrastructure");
    expect(
      await runWith(test, { cluster: v1beta1(true) }, clusterInfrastructurePhase),
    ).toBeUndefined();
  });

  it("does not wait when turned off, or without a Cluster", async () => {
    const off = fakeScope({ options: { waitForClusterInfrastructure: false } });
    expect(await runWith(off, { cluster: clusterWith({}) }, clusterInfrastructurePhase)).toBe(
      undefined,
    );
    expect(await runWith(fakeScope(), { cluster: undefined }, clusterInfrastructurePhase)).toBe(
      undefined,
    );
  });
});

describe("validateSpec", () => {
  it("reports an invalid spec with field paths, not raw JSON, and writes no spec", async () => {
    const cloud = fakeCloud();
    const schema = z.object({ spec: z.object({ image: z.string().min(1), maxSize: z.number() }) });
    const { run, section } = fakeScope({ driver: cloud.driver, spec: { image: "" }, schema });
    const result = await run(validateSpecPhase);
    expect(result?.ready.status).toBe("False");
    expect(result?.ready.reason).toBe("InvalidSpec");
    expect(result?.ready.message).toBe(
      "invalid spec: [spec.image: Too small: expected string to have >=1 characters, spec.maxSize: Required value]",
    );
    expect(result?.requeueAfterMs).toBeUndefined();
    expect(section("spec")).toBeUndefined();
    expect(cloud.calls).toEqual([]);
  });

  it("writes the spec the schema returned (its defaults applied) and the driver's context", async () => {
    const schema = z.object({
      spec: z.object({ image: z.string(), maxSize: z.number().default(7) }),
    });
    const test = fakeScope({ spec: { image: "img-9" }, schema });
    expect(await test.run(validateSpecPhase)).toBeUndefined();
    const written = test.section("spec");
    expect(written?.spec).toEqual({ image: "img-9", maxSize: 7 });
    expect(written?.context).toMatchObject({
      pool: { namespace: "default", name: "pool-1", uid: "uid-1", clusterName: "c1" },
      spec: { image: "img-9", maxSize: 7 },
      version: "v1.34.1",
      failureDomains: [],
      replicas: 2,
    });
    expect(written?.context.signal).toBe(test.scope.signal);
  });

  it("tells the driver the desired replicas, and none when an autoscaler manages them", async () => {
    const own = fakeScope({ spec: { image: "img" }, replicas: 5 });
    await own.run(validateSpecPhase);
    expect(own.section("spec")?.context.replicas).toBe(5);
    const external = fakeScope({
      spec: { image: "img" },
      replicas: 5,
      machinePoolAnnotations: { "cluster.x-k8s.io/replicas-managed-by": "cluster-autoscaler" },
    });
    await external.run(validateSpecPhase);
    expect(external.section("spec")?.context.replicas).toBeUndefined();
  });

  it("takes the raw spec as is without a schema", async () => {
    const test = fakeScope({ spec: { image: "img-raw", maxSize: 3 } });
    await test.run(validateSpecPhase);
    expect(test.section("spec")?.spec).toEqual({ image: "img-raw", maxSize: 3 });
    expect(test.section("spec")?.context.spec).toBe(test.section("spec")?.spec);
  });
});

describe("bootstrapData", () => {
  it("writes the data, its format and the Secret it came from", async () => {
    const test = fakeScope({ bootstrapData: { value: "#cloud-config\nruncmd: []\n" } });
    expect(await test.run(bootstrapDataPhase)).toBeUndefined();
    expect(test.section("bootstrap")).toEqual({
      userData: "#cloud-config\nruncmd: []\n",
      format: "cloud-config",
      secretRef: "default/pool-1-bootstrap",
    });
  });

  it("keeps the ignition format", async () => {
    const test = fakeScope({ bootstrapData: { value: '{"ignition":{}}', format: "ignition" } });
    await test.run(bootstrapDataPhase);
    expect(test.section("bootstrap")?.format).toBe("ignition");
  });

  it("registers the data as a secret, so it never shows in a message", async () => {
    const value = "#cloud-config\nwrite_files: [prerequisites-test-payload]\n";
    expect(redactText(`saw ${value}`)).toBe(`saw ${value}`);
    await fakeScope({ bootstrapData: { value } }).run(bootstrapDataPhase);
    expect(redactText(`saw ${value}`)).toBe("saw [REDACTED]");
    expect(redactText(Buffer.from(value).toString("base64"))).toBe("[REDACTED]");
  });

  it("refuses a format other than cloud-config and ignition, retried at resync", async () => {
    const test = fakeScope({ bootstrapData: { value: "#!/bin/sh\n", format: "shell-script" } });
    const result = await test.run(bootstrapDataPhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "UnsupportedBootstrapFormat",
        message: 'bootstrap data format "shell-script" is neither cloud-config nor ignition',
      },
      requeueAfterMs: test.scope.options.resyncMs,
    });
    expect(test.section("bootstrap")).toBeUndefined();
  });

  it("waits for an owner MachinePool", async () => {
    const test = fakeScope();
    const result = await runWith(test, { machinePool: undefined }, bootstrapDataPhase);
    expect(result?.ready).toEqual({
      status: "False",
      reason: "WaitingForOwner",
      message: "no owner MachinePool",
    });
    expect(test.section("bootstrap")).toBeUndefined();
  });

  it("waits, without a requeue, while the MachinePool names no data secret", async () => {
    const test = fakeScope();
    const machinePool = structuredClone(test.scope.machinePool) as NonNullable<
      Test["scope"]["machinePool"]
    >;
    machinePool.spec.template.spec.bootstrap = {};
    const result = await runWith(test, { machinePool }, bootstrapDataPhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "WaitingForBootstrapData",
        message: "MachinePool pool-1 has no bootstrap data secret yet",
      },
    });
    expect(test.section("bootstrap")).toBeUndefined();
  });

  it("polls while the named Secret does not exist, or lacks its value", async () => {
    const missing = fakeScope();
    missing.scope.api.readSecret = async () => undefined;
    expect(await missing.run(bootstrapDataPhase)).toEqual({
      ready: {
        status: "False",
        reason: "WaitingForBootstrapData",
        message:
          "bootstrap data secret default/pool-1-bootstrap named by MachinePool default/pool-1 does not exist (yet); retry later",
      },
      requeueAfterMs: missing.scope.options.pollMs,
    });
    const empty = fakeScope();
    empty.scope.api.readSecret = async () => ({ data: {} });
    const result = await empty.run(bootstrapDataPhase);
    expect(result?.ready.message).toBe(
      'bootstrap data secret default/pool-1-bootstrap has no "value" key; the bootstrap provider must write it',
    );
    expect(result?.requeueAfterMs).toBe(100);
  });

  it("says only the HTTP status of an API error, never what the server wrote", async () => {
    const test = fakeScope();
    test.scope.api.readSecret = async () => {
      throw new ApiError(
        403,
        { reason: "Forbidden", message: 'secrets "pool-1-bootstrap" is forbidden: echo hunter2' },
        { method: "GET", path: "/api/v1/namespaces/default/secrets/pool-1-bootstrap" },
      );
    };
    const result = await test.run(bootstrapDataPhase);
    expect(result?.ready).toEqual({
      status: "False",
      reason: "WaitingForBootstrapData",
      message: "reading the bootstrap data Secret failed: HTTP 403 Forbidden",
    });
    expect(result?.requeueAfterMs).toBe(test.scope.options.pollMs);
    const bare = fakeScope();
    bare.scope.api.readSecret = async () => {
      throw new ApiError(500, { message: "etcd said something" }, { method: "GET", path: "/x" });
    };
    expect((await bare.run(bootstrapDataPhase))?.ready.message).toBe(
      "reading the bootstrap data Secret failed: HTTP 500",
    );
  });

  it("redacts credentials from any other error's message", async () => {
    const test = fakeScope();
    test.scope.api.readSecret = async () => {
      throw new Error("connection reset, password=hunter2hunter2");
    };
    expect((await test.run(bootstrapDataPhase))?.ready.message).toBe(
      "connection reset, password=[REDACTED]",
    );
  });

  it('writes empty data with bootstrapData "none", reading no Secret even without a MachinePool', async () => {
    const test = fakeScope({ options: { bootstrapData: "none" } });
    let reads = 0;
    test.scope.api.readSecret = async () => {
      reads++;
      return undefined;
    };
    expect(await runWith(test, { machinePool: undefined }, bootstrapDataPhase)).toBeUndefined();
    expect(test.section("bootstrap")).toEqual({
      userData: "",
      format: "cloud-config",
      secretRef: "",
    });
    expect(reads).toBe(0);
  });
});

describe("desiredState", () => {
  /** A scope after validateSpec and bootstrapData, over `driver` and `memory`. */
  function desiredScope(
    options: {
      driver?: ReturnType<typeof fakeCloud>["driver"];
      memory?: PoolMemory;
      spec?: FakeSpec;
      bootstrap?: BootstrapSection;
    } = {},
  ) {
    return fakeScope({
      ...(options.driver ? { driver: options.driver } : {}),
      memory: options.memory ?? new PoolMemory(),
      spec: options.spec ?? { image: "img-1" },
      sections: { bootstrap: options.bootstrap ?? BOOTSTRAP },
    });
  }

  it("writes the target stamp of the template inputs and bootstrap data, and the settings", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    const test = desiredScope({
      driver: cloud.driver,
      memory,
      spec: { image: "img-4", maxSize: 6 },
    });
    expect(await test.run(desiredStatePhase)).toBeUndefined();
    expect(test.section("desired")).toEqual({
      stamp: targetStamp({ image: "img-4" }, BOOTSTRAP.userData, BOOTSTRAP.secretRef),
      settings: { maxSize: 6 },
    });
    expect(memory.lastInputs?.settings).toBe(stableStringify({ maxSize: 6 }));
    expect(cloud.calls).toEqual([]);
    expect(test.events).toEqual([]);
  });

  it("changes only the bootstrap parts of the stamp when the bootstrap data changes", async () => {
    const a = desiredScope();
    await a.run(desiredStatePhase);
    const b = desiredScope({ bootstrap: { ...BOOTSTRAP, userData: "#cloud-config\nnew-token\n" } });
    await b.run(desiredStatePhase);
    const c = desiredScope({
      bootstrap: { ...BOOTSTRAP, secretRef: "default/pool-1-bootstrap-2" },
    });
    await c.run(desiredStatePhase);
    const [sa, sb, sc] = [a, b, c].map((t) => t.section("desired")?.stamp);
    expect(sb?.specHash).toBe(sa?.specHash);
    expect(sb?.bootstrapRef).toBe(sa?.bootstrapRef);
    expect(sb?.bootstrapHash).not.toBe(sa?.bootstrapHash);
    expect(sc?.bootstrapRef).not.toBe(sa?.bootstrapRef);
    expect(sc?.bootstrapHash).toBe(sa?.bootstrapHash);
  });

  describe("a version change that the template inputs do not follow", () => {
    /** A scope at MachinePool version `version` over a driver whose inputs read only the spec. */
    const at = (version: string, memory: PoolMemory, spec: FakeSpec = { image: "img-1" }) =>
      fakeScope({
        memory,
        spec,
        machinePoolTemplate: { spec: { version } },
        sections: { bootstrap: BOOTSTRAP },
      });

    it("says so on VersionRollout, with both versions, until the inputs change", async () => {
      const memory = new PoolMemory();
      const first = at("v1.34.1", memory);
      await first.run(desiredStatePhase);
      expect(first.section("desired")?.versionCondition).toBeUndefined();
      const upgraded = at("v1.35.0", memory);
      expect(await upgraded.run(desiredStatePhase)).toBeUndefined();
      expect(upgraded.section("desired")?.versionCondition).toMatchObject({
        status: "False",
        reason: "VersionNotRolled",
        message: expect.stringMatching(
          /from v1\.34\.1 to v1\.35\.0 but the driver's template inputs did not/,
        ),
      });
      expect(upgraded.events).toMatchObject([{ type: "Warning", reason: "VersionNotRolled" }]);
      // Still so on the next reconcile, without a second Event.
      const again = at("v1.35.0", memory);
      await again.run(desiredStatePhase);
      expect(again.section("desired")?.versionCondition?.reason).toBe("VersionNotRolled");
      expect(again.events).toEqual([]);
      // The user changes the image with the version: the inputs roll the pool, the condition goes.
      const fixed = at("v1.35.0", memory, { image: "img-2" });
      await fixed.run(desiredStatePhase);
      expect(fixed.section("desired")?.versionCondition).toBeUndefined();
    });

    it("says nothing when the inputs change with the version", async () => {
      const cloud = fakeCloud();
      const following = {
        ...cloud.driver,
        templateInputs: (ctx: { version: string | undefined }) => ({ image: `k8s-${ctx.version}` }),
      };
      const memory = new PoolMemory();
      const scopeAt = (version: string) =>
        fakeScope({
          driver: following,
          memory,
          spec: { image: "img-1" },
          machinePoolTemplate: { spec: { version } },
          sections: { bootstrap: BOOTSTRAP },
        });
      await scopeAt("v1.34.1").run(desiredStatePhase);
      const upgraded = scopeAt("v1.35.0");
      await upgraded.run(desiredStatePhase);
      expect(upgraded.section("desired")?.versionCondition).toBeUndefined();
      expect(upgraded.events).toEqual([]);
    });

    it("keeps a condition found on the pool after a restart while the inputs stay", async () => {
      const memory = new PoolMemory();
      const restarted = at("v1.35.0", memory);
      restarted.scope.pool.status = {
        conditions: [
          {
            type: "VersionRollout",
            status: "False",
            reason: "VersionNotRolled",
            message: "the MachinePool's version changed from v1.34.1 to v1.35.0 …",
            lastTransitionTime: "2026-01-01T00:00:00Z",
          },
        ],
      };
      await restarted.run(desiredStatePhase);
      expect(restarted.section("desired")?.versionCondition?.reason).toBe("VersionNotRolled");
      const fixed = at("v1.35.0", memory, { image: "img-2" });
      await fixed.run(desiredStatePhase);
      expect(fixed.section("desired")?.versionCondition).toBeUndefined();
    });
  });

  it("stops when templateInputs are not pure, before any cloud call", async () => {
    const cloud = fakeCloud();
    let n = 0;
    const impure = { ...cloud.driver, templateInputs: () => ({ built: n++ }) };
    const memory = new PoolMemory();
    const test = desiredScope({ driver: impure, memory });
    const { run, events, section } = test;
    const result = await run(desiredStatePhase);
    expect(result?.ready.reason).toBe("TemplateInputsNotPure");
    expect(result?.ready.message).toMatch(
      /^templateInputs returned different values for the same pool .*; the kit makes no cloud change to this pool until this is fixed$/,
    );
    expect(result?.requeueAfterMs).toBe(test.scope.options.resyncMs);
    expect(events).toMatchObject([{ type: "Warning", reason: "TemplateInputsNotPure" }]);
    expect(section("desired")).toBeUndefined();
    expect(memory.stopped?.reason).toBe("TemplateInputsNotPure");
    expect(cloud.calls).toEqual([]);
  });

  it("stops when templateInputs differ from the last reconcile's for the same inputs", async () => {
    const cloud = fakeCloud();
    let salt = 0;
    const drifting = {
      ...cloud.driver,
      templateInputs: (ctx: { spec: FakeSpec }) => ({ image: ctx.spec.image, salt }),
    };
    const memory = new PoolMemory();
    expect(await desiredScope({ driver: drifting, memory }).run(desiredStatePhase)).toBe(undefined);
    salt = 1;
    const again = desiredScope({ driver: drifting, memory });
    expect((await again.run(desiredStatePhase))?.ready.reason).toBe("TemplateInputsNotPure");
    expect(again.section("desired")).toBeUndefined();
  });

  it("accepts new template inputs when the pool's inputs changed", async () => {
    const memory = new PoolMemory();
    await desiredScope({ memory }).run(desiredStatePhase);
    const first = memory.lastInputs;
    const changed = desiredScope({ memory, spec: { image: "img-2" } });
    expect(await changed.run(desiredStatePhase)).toBeUndefined();
    expect(memory.lastInputs?.context).not.toBe(first?.context);
    expect(memory.lastInputs?.specHash).not.toBe(first?.specHash);
  });

  it("keeps a stopped runaway latched while the inputs stay, without another Event", async () => {
    const cloud = fakeCloud();
    let calls = 0;
    let pure = false;
    const driver = {
      ...cloud.driver,
      templateInputs: (ctx: { spec: FakeSpec }) => {
        calls++;
        return pure ? { image: ctx.spec.image } : { image: ctx.spec.image, n: calls };
      },
    };
    const memory = new PoolMemory();
    const stopped = await desiredScope({ driver, memory }).run(desiredStatePhase);
    pure = true; // the driver is fixed, but nothing the kit hashes changed
    calls = 0;
    const latched = desiredScope({ driver, memory });
    expect(await latched.run(desiredStatePhase)).toEqual(stopped);
    expect(calls).toBe(0);
    expect(latched.events).toEqual([]);
    expect(latched.section("desired")).toBeUndefined();
  });

  it("releases a latched runaway and its counters once the spec or the bootstrap data change", async () => {
    for (const change of [
      { spec: { image: "img-2" } },
      { bootstrap: { ...BOOTSTRAP, userData: "#cloud-config\nrotated\n" } },
    ]) {
      const memory = new PoolMemory();
      const before = desiredScope({ memory });
      memory.stopped = {
        reason: "TemplateStampNotStored",
        message: "stopped by the template phase",
        fingerprint: inputsFingerprint(before.scope),
      };
      memory.templateCreates = { target: "t", versions: ["1", "2"] };
      memory.settingsUpdates = { desired: "s", count: 3 };
      expect(await before.run(desiredStatePhase)).toEqual({
        ready: {
          status: "False",
          reason: "TemplateStampNotStored",
          message: "stopped by the template phase",
        },
        requeueAfterMs: before.scope.options.resyncMs,
      });
      expect(memory.templateCreates).toBeDefined();
      const released = desiredScope({ memory, ...change });
      expect(await released.run(desiredStatePhase)).toBeUndefined();
      expect(memory.stopped).toBeUndefined();
      // The counts are their owners' to start over (countedSinceRelease): the release moves the number.
      expect(memory.runawayReleases).toBe(1);
      expect(countedSinceRelease(memory, memory.templateCreates)).toBeUndefined();
      expect(countedSinceRelease(memory, memory.settingsUpdates)).toBeUndefined();
      expect(memory.lastInputs?.context).toBe(inputsFingerprint(released.scope));
      expect(released.section("desired")).toBeDefined();
    }
  });
});
