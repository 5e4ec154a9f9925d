import type { PatchTransport } from "@capi-ts/sdk/patch";
import {
  apiVersionOf,
  isNotFound,
  type KubeClient,
  type ObjectKey,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";

/** Which part of the emulator made a write: core's MachinePool or Machine controller, or the bootstrap stand-in. */
export type CoreActor = "machinepool" | "machine" | "bootstrap";

/**
 * One write the emulator sent to the API server, in order. Conformance tests assert on these (for
 * example: nothing but Node patches at steady state, no `spec.providerIDList` churn).
 */
export interface CoreWrite {
  /** Position in the log, from 1. */
  seq: number;
  /** When the request was sent. */
  time: Date;
  /** The controller that wrote: core's MachinePool or Machine controller, or the bootstrap stand-in. */
  actor: CoreActor;
  /**
   * `create`, `patch` (JSON merge patch), `apply` (server-side apply, forced) or `delete`; a Pod
   * eviction is a `create` of the Pod's `eviction` subresource.
   */
  verb: "create" | "patch" | "apply" | "delete";
  /** `apiVersion` of the target. */
  apiVersion: string;
  /** Kind of the target. */
  kind: string;
  /** Namespace of the target (absent for Nodes). */
  namespace?: string;
  /** Name of the target. */
  name: string;
  /** `status` when the write went to the status subresource, `eviction` for a Pod eviction. */
  subresource?: "status" | "eviction";
  /** The merge patch, or the created object. */
  body?: unknown;
  /** Why core made this write, in the words of its code (e.g. "set controller reference and cluster-name label"). */
  reason: string;
  /** `namespace/name` of the MachinePool whose reconcile made it (for the Machine controller: the pool that controls the Machine). */
  machinePool?: string;
  /** `namespace/name` of the Machine whose reconcile made it (writes of core's Machine controller). */
  machine?: string;
  /** The API server's answer: `ok`, or the error message. */
  outcome: "ok" | { error: string };
}

/** A filter over {@link CoreWrite}s; every given field must match. */
export interface CoreWriteFilter {
  /** Only this actor. */
  actor?: CoreActor;
  /** Only this verb. */
  verb?: CoreWrite["verb"];
  /** Only this kind. */
  kind?: string;
  /** Only this object name. */
  name?: string;
  /** Only writes made while reconciling this MachinePool (`namespace/name`), or one of its Machines. */
  machinePool?: string;
  /** Only writes made while reconciling this Machine (`namespace/name`). */
  machine?: string;
  /** Only writes to (`"status"`) or not to (`"main"`) the status subresource. */
  subresource?: "status" | "main";
  /** Only successful (`true`) or failed (`false`) writes. */
  succeeded?: boolean;
  /** Only writes whose reason contains this text or matches this pattern. */
  reason?: string | RegExp;
  /** Only writes after this sequence number (take it from the last write seen). */
  afterSeq?: number;
}

export function matchesWrite(write: CoreWrite, filter: CoreWriteFilter): boolean {
  if (filter.actor && write.actor !== filter.actor) return false;
  if (filter.verb && write.verb !== filter.verb) return false;
  if (filter.kind && write.kind !== filter.kind) return false;
  if (filter.name && write.name !== filter.name) return false;
  if (filter.machinePool && write.machinePool !== filter.machinePool) return false;
  if (filter.machine && write.machine !== filter.machine) return false;
  if (filter.subresource === "status" && write.subresource !== "status") return false;
  if (filter.subresource === "main" && write.subresource === "status") return false;
  if (filter.succeeded !== undefined && (write.outcome === "ok") !== filter.succeeded) return false;
  if (filter.afterSeq !== undefined && write.seq <= filter.afterSeq) return false;
  if (typeof filter.reason === "string" && !write.reason.includes(filter.reason)) return false;
  if (filter.reason instanceof RegExp && !filter.reason.test(write.reason)) return false;
  return true;
}

/** The shared, ordered log of every write. */
export class WriteLog {
  private readonly entries: CoreWrite[] = [];
  private seq = 0;

  add(write: Omit<CoreWrite, "seq">): CoreWrite {
    const entry = { ...write, seq: ++this.seq };
    this.entries.push(entry);
    return entry;
  }

  list(filter: CoreWriteFilter = {}): CoreWrite[] {
    return this.entries.filter((write) => matchesWrite(write, filter));
  }

  clear(): void {
    this.entries.length = 0;
  }
}

/** What a write is about: why, and for which MachinePool (and Machine). */
export interface WriteContext {
  reason: string;
  machinePool?: string;
  machine?: string;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function keyOf(key: ObjectKey): ObjectKey {
  return key.namespace ? { namespace: key.namespace, name: key.name } : { name: key.name };
}

/**
 * Sends the emulator's writes through the manager's client (so the informer cache sees them for
 * read-your-own-writes) and records each one, successful or not.
 */
export class RecordingWriter {
  private readonly client: KubeClient;
  private readonly log: WriteLog;
  private readonly actor: CoreActor;

  constructor(client: KubeClient, log: WriteLog, actor: CoreActor) {
    this.client = client;
    this.log = log;
    this.actor = actor;
  }

  private async record<T>(
    resource: ResourceDescriptor,
    verb: CoreWrite["verb"],
    key: ObjectKey,
    body: unknown,
    context: WriteContext,
    subresource: CoreWrite["subresource"],
    send: () => Promise<T>,
  ): Promise<T> {
    const base: Omit<CoreWrite, "seq" | "outcome"> = {
      time: new Date(),
      actor: this.actor,
      verb,
      apiVersion: apiVersionOf(resource),
      kind: resource.kind,
      name: key.name,
      reason: context.reason,
    };
    if (key.namespace) base.namespace = key.namespace;
    if (subresource) base.subresource = subresource;
    if (body !== undefined) base.body = body;
    if (context.machinePool) base.machinePool = context.machinePool;
    if (context.machine) base.machine = context.machine;
    try {
      const result = await send();
      this.log.add({ ...base, outcome: "ok" });
      return result;
    } catch (error) {
      this.log.add({ ...base, outcome: { error: messageOf(error) } });
      throw error;
    }
  }

  /** JSON merge patch of the object or its status. */
  mergePatch<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey,
    patch: unknown,
    context: WriteContext,
    subresource?: "status",
    client: KubeClient = this.client,
  ): Promise<T> {
    return this.record(resource, "patch", key, patch, context, subresource, () =>
      subresource === "status"
        ? client.mergePatchStatus(resource, keyOf(key), patch)
        : client.mergePatch(resource, keyOf(key), patch),
    );
  }

  /** Server-side apply with forced ownership, as core's `ssa.Patch` sends it. */
  apply<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    fieldManager: string,
    context: WriteContext,
  ): Promise<T> {
    const key = { namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? "" };
    return this.record(resource, "apply", keyOf(key as ObjectKey), obj, context, undefined, () =>
      this.client.apply(resource, obj, { fieldManager, force: true }),
    );
  }

  /** Creates an object. */
  create<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    context: WriteContext,
  ): Promise<T> {
    const key = { namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? "" };
    return this.record(resource, "create", keyOf(key as ObjectKey), obj, context, undefined, () =>
      this.client.create(resource, obj),
    );
  }

  /** Deletes an object; NotFound counts as done (returns false). */
  async delete(
    resource: ResourceDescriptor,
    key: ObjectKey,
    context: WriteContext,
    client: KubeClient = this.client,
  ): Promise<boolean> {
    try {
      await this.record(resource, "delete", key, undefined, context, undefined, () =>
        client.delete(resource, keyOf(key)),
      );
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Evicts a Pod (`POST …/pods/<name>/eviction`, policy/v1), as core's drain does; a grace period
   * overrides the Pod's own.
   */
  async evict(
    pod: { metadata?: { namespace?: string; name?: string } },
    gracePeriodSeconds: number | undefined,
    context: WriteContext,
    client: KubeClient = this.client,
  ): Promise<void> {
    const namespace = pod.metadata?.namespace ?? "";
    const name = pod.metadata?.name ?? "";
    const body = {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name, namespace },
      deleteOptions: gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds },
    };
    const resource: ResourceDescriptor = {
      group: "",
      version: "v1",
      kind: "Pod",
      plural: "pods",
      scope: "Namespaced",
    };
    await this.record(resource, "create", { namespace, name }, body, context, "eviction", () =>
      client.request({
        method: "POST",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/eviction`,
        body,
      }),
    );
  }

  /** A patch transport for the SDK's PatchHelper that records through this writer. */
  transport(resource: ResourceDescriptor, context: WriteContext): PatchTransport {
    return {
      get: async (_ref, namespace, name) =>
        (await this.client.get(
          resource,
          namespace === undefined ? { name } : { namespace, name },
        )) as never,
      patch: async (_ref, namespace, name, body, contentType, subresource) => {
        if (contentType !== "application/merge-patch+json") {
          throw new TypeError(`the emulator only sends merge patches, got ${contentType}`);
        }
        const key = namespace === undefined ? { name } : { namespace, name };
        return (await this.mergePatch(resource, key, body, context, subresource)) as never;
      },
    };
  }
}
