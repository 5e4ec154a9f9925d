/**
 * An in-memory cloud with the behaviour of a real scaling group: the group keeps `desired` instances
 * running (launching and replacing), terminates the newest on shrink, and reports every call. The hooks
 * let a test make a Node join for each launched instance, as a kubelet would.
 */
import {
  type CloudClient,
  type CloudCredentials,
  type CloudGroup,
  type CloudInstance,
  CloudNotFoundError,
  type CloudTemplate,
  type CloudTemplateVersion,
  CloudUnauthorizedError,
} from "../src/cloud.js";

interface Group {
  name: string;
  desired: number;
  templateVersion: string;
  zones: string[];
  tags: Record<string, string>;
  instances: CloudInstance[];
}

interface Template {
  tags: Record<string, string>;
  versions: CloudTemplateVersion[];
}

/** Hooks called when an instance starts and when it is gone. */
export interface MemoryCloudHooks {
  onLaunch?(groupName: string, instance: CloudInstance): void | Promise<void>;
  onTerminate?(groupName: string, instance: CloudInstance): void | Promise<void>;
}

export class MemoryCloud implements CloudClient {
  readonly groups = new Map<string, Group>();
  readonly templates = new Map<string, Template>();
  readonly calls: Array<{ operation: string; mutating: boolean; resize: boolean }> = [];
  private nextId = 1;
  private pending: Promise<unknown>[] = [];

  /** The one token this cloud accepts (a test rotates it to see refused credentials). */
  token = "memory-cloud-token";

  constructor(private readonly hooks: MemoryCloudHooks = {}) {}

  /**
   * A client holding `credentials`, as the provider's `ConnectCloud` makes one: each call is refused
   * (`CloudUnauthorizedError`) while its token is not the cloud's.
   */
  connect(credentials: CloudCredentials): CloudClient {
    return new Proxy(this, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (credentials.token !== this.token) {
            throw new CloudUnauthorizedError(
              `${credentials.endpoint}: the token was refused (401)`,
            );
          }
          return value.apply(target, args);
        };
      },
    });
  }

  async describeTemplate(name: string): Promise<CloudTemplate | undefined> {
    this.record("describeTemplate", false);
    const template = this.templates.get(name);
    return template && { name, tags: { ...template.tags }, versions: [...template.versions] };
  }
  async createTemplateVersion(
    name: string,
    input: { tags: Record<string, string>; templateTags: Record<string, string> },
  ) {
    this.record("createTemplateVersion", true);
    const template = this.templates.get(name) ?? { tags: { ...input.templateTags }, versions: [] };
    const version = {
      version: String(
        template.versions.length === 0 ? 1 : Number(template.versions.at(-1)?.version) + 1,
      ),
      tags: { ...input.tags },
      createdAt: Date.now(),
    };
    template.versions.push(version);
    this.templates.set(name, template);
    return version;
  }
  async deleteTemplate(name: string, versions?: readonly string[]) {
    this.record("deleteTemplate", true);
    const template = this.templates.get(name);
    if (!versions) this.templates.delete(name);
    else if (template) {
      template.versions = template.versions.filter((v) => !versions.includes(v.version));
    }
  }
  async describeGroup(name: string): Promise<CloudGroup | undefined> {
    this.record("describeGroup", false);
    const group = this.groups.get(name);
    return (
      group && {
        ...group,
        zones: [...group.zones],
        tags: { ...group.tags },
        instances: [...group.instances],
      }
    );
  }
  async createGroup(
    name: string,
    input: {
      desired?: number;
      templateVersion: string;
      zones: readonly string[];
      tags: Record<string, string>;
    },
  ) {
    this.record("createGroup", true, true);
    this.groups.set(name, {
      name,
      // Without a desired size this cloud starts empty (AWS would take the group's MinSize).
      desired: input.desired ?? 0,
      templateVersion: input.templateVersion,
      zones: [...input.zones],
      tags: { ...input.tags },
      instances: [],
    });
    this.converge(name);
  }
  async updateGroup(
    name: string,
    input: { desired?: number; templateVersion?: string; zones?: readonly string[] },
  ) {
    this.record("updateGroup", true, input.desired !== undefined);
    const group = this.mustGroup(name);
    if (input.desired !== undefined) group.desired = input.desired;
    if (input.templateVersion !== undefined) group.templateVersion = input.templateVersion;
    if (input.zones) group.zones = [...input.zones];
    this.converge(name);
  }
  async deleteGroup(name: string) {
    this.record("deleteGroup", true);
    const group = this.groups.get(name);
    if (!group) return;
    for (const instance of group.instances) this.gone(name, instance);
    this.groups.delete(name);
  }
  async terminateInstance(name: string, instanceId: string, decrementDesired: boolean) {
    this.record("terminateInstance", true);
    this.outOfBandTerminate(name, instanceId, decrementDesired);
  }

  /** An instance disappears (a user, a spot interruption); the group replaces it unless told not to. */
  outOfBandTerminate(name: string, instanceId: string, decrementDesired = false): void {
    const group = this.groups.get(name);
    const instance = group?.instances.find((i) => i.id === instanceId);
    if (!group || !instance) return;
    group.instances = group.instances.filter((i) => i !== instance);
    if (decrementDesired) group.desired = Math.max(0, group.desired - 1);
    this.gone(name, instance);
    this.converge(name);
  }

  /** Sets the desired size as an external autoscaler would. */
  setDesired(name: string, desired: number): void {
    this.mustGroup(name).desired = desired;
    this.converge(name);
  }

  /** Waits for the hooks in flight. */
  async flush(): Promise<void> {
    while (this.pending.length > 0) await Promise.allSettled(this.pending.splice(0));
  }

  private converge(name: string): void {
    const group = this.mustGroup(name);
    while (group.instances.length < group.desired) {
      const instance: CloudInstance = {
        id: `i-${String(this.nextId++).padStart(6, "0")}`,
        zone: group.zones[group.instances.length % group.zones.length] ?? "zone-a",
        state: "running",
        templateVersion: group.templateVersion,
        launchedAt: Date.now(),
      };
      group.instances.push(instance);
      if (this.hooks.onLaunch)
        this.pending.push(Promise.resolve(this.hooks.onLaunch(name, instance)));
    }
    while (group.instances.length > group.desired) {
      const newest = group.instances.pop();
      if (newest) this.gone(name, newest);
    }
  }

  private gone(name: string, instance: CloudInstance): void {
    if (this.hooks.onTerminate)
      this.pending.push(Promise.resolve(this.hooks.onTerminate(name, instance)));
  }

  private mustGroup(name: string): Group {
    const group = this.groups.get(name);
    if (!group) throw new CloudNotFoundError(`group ${name} not found`);
    return group;
  }

  private record(operation: string, mutating: boolean, resize = false): void {
    this.calls.push({ operation, mutating, resize });
  }
}
