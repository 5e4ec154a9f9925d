/**
 * The test kit's fake cloud: an in-memory scaling group whose driver records every call, for tests of
 * phases and of the kit that need a cloud but not a provider's.
 *
 * @module
 */
import type {
  GroupUpdate,
  PoolDriver,
  PoolGroup,
  PoolInstance,
  PoolInstanceState,
  TemplateVersion,
} from "./driver.js";

/** The fake's spec and settings. */
export interface FakeSpec {
  readonly image: string;
  readonly maxSize?: number;
}
/** The fake's group settings. */
export interface FakeSettings {
  readonly maxSize: number;
}

/** A recorded driver call. */
export interface FakeCall {
  readonly op: keyof PoolDriver<FakeSpec, FakeSettings>;
  readonly args: readonly unknown[];
}

/** The in-memory cloud: what is there, what was called; `faults` make a method throw. */
export interface FakeCloud {
  versions: TemplateVersion[];
  group: PoolGroup<FakeSettings> | undefined;
  readonly calls: FakeCall[];
  readonly faults: Partial<Record<FakeCall["op"], () => unknown>>;
  readonly driver: PoolDriver<FakeSpec, FakeSettings>;
  /** Mutating calls so far. */
  mutating(): FakeCall[];
}

let instanceSeq = 0;

/** An instance of the fake cloud. */
export function fakeInstance(overrides: Partial<PoolInstance> = {}): PoolInstance {
  const id = overrides.id ?? `i-${++instanceSeq}`;
  return {
    id,
    providerID: `fake:///zone-a/${id}`,
    state: "running",
    templateVersion: "1",
    createdAt: instanceSeq,
    ...overrides,
  };
}

/**
 * An instance named `id` for the pure engine's tests: launched at the number in its ID (`i3` at 3),
 * running, healthy and on template version "2" unless `options` say otherwise.
 */
export function instanceOf(
  id: string,
  options: {
    state?: PoolInstanceState;
    version?: string;
    createdAt?: number;
    healthy?: boolean;
  } = {},
): PoolInstance {
  return {
    id,
    providerID: `fake:///zone-a/${id}`,
    state: options.state ?? "running",
    templateVersion: options.version ?? "2",
    createdAt: options.createdAt ?? Number(id.replace(/\D/g, "") || 0),
    healthy: options.healthy ?? true,
  };
}

/** A fake cloud whose driver stores what it is given and reports it back. */
export function fakeCloud(): FakeCloud {
  const cloud: FakeCloud = {
    versions: [],
    group: undefined,
    calls: [],
    faults: {},
    mutating: () => cloud.calls.filter((c) => !["getGroup", "getTemplate"].includes(c.op)),
    driver: undefined as unknown as PoolDriver<FakeSpec, FakeSettings>,
  };
  const record = (op: FakeCall["op"], args: readonly unknown[]) => {
    cloud.calls.push({ op, args });
    const fault = cloud.faults[op];
    if (fault) throw fault();
  };
  const driver: PoolDriver<FakeSpec, FakeSettings> = {
    templateInputs: (ctx) => ({ image: ctx.spec.image }),
    groupSettings: (ctx) => ({ maxSize: ctx.spec.maxSize ?? 10 }),
    async getTemplate() {
      record("getTemplate", []);
      return cloud.versions;
    },
    async createTemplateVersion(_ctx, input) {
      record("createTemplateVersion", [input.stamp]);
      const version = { version: String(cloud.versions.length + 1), stamp: input.stamp };
      cloud.versions = [...cloud.versions, version];
      return version;
    },
    async deleteTemplate(_ctx, versions) {
      record("deleteTemplate", [versions]);
      cloud.versions = versions ? cloud.versions.filter((v) => !versions.includes(v.version)) : [];
    },
    async getGroup() {
      record("getGroup", []);
      return cloud.group;
    },
    async createGroup(_ctx, intent) {
      record("createGroup", [intent]);
      cloud.group = {
        id: "group-1",
        status: "active",
        desiredReplicas: intent.replicas ?? 0,
        templateVersion: intent.templateVersion,
        settings: intent.settings,
        instances: [],
        ...(intent.bounds
          ? { minReplicas: intent.bounds.min, maxReplicas: intent.bounds.max }
          : {}),
      };
    },
    async updateGroup(_ctx, update: GroupUpdate<FakeSettings>) {
      record("updateGroup", [update]);
      const group = cloud.group;
      if (!group) return;
      cloud.group = {
        ...group,
        ...(update.replicas !== undefined ? { desiredReplicas: update.replicas } : {}),
        ...(update.templateVersion !== undefined
          ? { templateVersion: update.templateVersion }
          : {}),
        ...(update.settings !== undefined ? { settings: update.settings } : {}),
        ...(update.bounds !== undefined
          ? { minReplicas: update.bounds.min, maxReplicas: update.bounds.max }
          : {}),
      };
    },
    async deleteGroup() {
      record("deleteGroup", []);
      if (cloud.group) cloud.group = { ...cloud.group, status: "deleting" };
    },
    async deleteInstance(_ctx, instance, mode) {
      record("deleteInstance", [instance.id, mode]);
      const group = cloud.group;
      if (!group) return;
      cloud.group = {
        ...group,
        desiredReplicas: group.desiredReplicas - (mode === "shrink" ? 1 : 0),
        instances: group.instances.filter((i) => i.id !== instance.id),
      };
    },
  };
  (cloud as { driver: PoolDriver<FakeSpec, FakeSettings> }).driver = driver;
  return cloud;
}
