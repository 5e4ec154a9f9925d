import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import { type Clock, systemClock } from "./clock.js";
import { NotFoundError } from "./errors.js";
import { type RuntimeLogger, silentLogger } from "./logging.js";
import { redactText } from "./redact.js";
import { EventResource } from "./resource.js";

/** `Normal` for routine, `Warning` for something the user should look at. */
export type EventType = "Normal" | "Warning";

interface Aggregate {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  chain: Promise<void>;
}

/** Options of {@link EventRecorder}. */
export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent`, usually the controller name. */
  component: string;
  /** `source.host` / `reportingInstance`; default the host name. */
  host?: string;
  /** Logger for failures to record (which never throw). */
  logger?: RuntimeLogger;
  /** How many distinct events to remember for aggregation. Default 4096. */
  maxTracked?: number;
  /** Time source of the Events' timestamps. Default: the system clock. */
  clock?: Clock;
}

const MAX_MESSAGE = 1024;

/**
 * Records core v1 Events about objects. Repeats of the same event (same object, type, reason and
 * message) are aggregated into one Event whose `count` and `lastTimestamp` advance, as client-go's
 * correlator does, instead of creating a new object each time. Recording never throws and never
 * blocks a reconcile; failures are logged.
 *
 * @example
 * ```ts
 * ctx.recorder.event(pool, "Warning", "ScalingFailed", "the cloud refused to scale: quota exceeded");
 * ```
 */
export class EventRecorder {
  private readonly client: KubeClient;
  private readonly component: string;
  private readonly host: string;
  private readonly log: RuntimeLogger;
  private readonly maxTracked: number;
  private readonly clock: Clock;
  private readonly aggregates = new Map<string, Aggregate>();
  private readonly pending = new Set<Promise<void>>();

  /** Creates a recorder writing through `client`. */
  constructor(client: KubeClient, options: EventRecorderOptions) {
    this.client = client;
    this.component = options.component;
    this.host = options.host ?? hostname();
    this.log = (options.logger ?? silentLogger()).child({ component: "events" });
    this.maxTracked = options.maxTracked ?? 4096;
    this.clock = options.clock ?? systemClock;
  }

  /** Records an event about `obj` (fire and forget). */
  event(obj: KubernetesObject, type: EventType, reason: string, rawMessage: string): void {
    // Events are readable by anyone who can list them: the redaction layer runs on every message.
    const message = redactText(rawMessage);
    const meta = obj.metadata ?? {};
    if (!meta.name) {
      this.log.warn({ reason }, "cannot record an event for an object without metadata.name");
      return;
    }
    const trimmed =
      message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const key = [
      obj.apiVersion,
      obj.kind,
      meta.namespace,
      meta.name,
      meta.uid,
      type,
      reason,
      trimmed,
    ].join("\u0000");
    const nowMs = this.clock.now();
    const now = new Date(nowMs).toISOString();
    let aggregate = this.aggregates.get(key);
    if (aggregate === undefined) {
      aggregate = {
        name: `${meta.name}.${Math.floor(nowMs).toString(16)}${randomBytes(2).toString("hex")}`,
        namespace: meta.namespace || "default",
        count: 0,
        firstTimestamp: now,
        chain: Promise.resolve(),
      };
      if (this.aggregates.size >= this.maxTracked) {
        const oldest = this.aggregates.keys().next().value;
        if (oldest !== undefined) this.aggregates.delete(oldest);
      }
      this.aggregates.set(key, aggregate);
    }
    const target = aggregate;
    target.count++;
    const count = target.count;
    const write = target.chain.then(() =>
      this.write(obj, target, count, type, reason, trimmed, now),
    );
    target.chain = write;
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  /** Resolves once every event recorded so far has been written (or failed). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async write(
    obj: KubernetesObject,
    aggregate: Aggregate,
    count: number,
    type: EventType,
    reason: string,
    message: string,
    now: string,
  ): Promise<void> {
    const meta = obj.metadata ?? {};
    try {
      if (count > 1) {
        try {
          await this.client.mergePatch(
            EventResource,
            { namespace: aggregate.namespace, name: aggregate.name },
            { count, lastTimestamp: now },
          );
          return;
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
          // The Event expired (events have a TTL); start a new one.
        }
      }
      const involvedObject: Record<string, unknown> = {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: meta.name,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      };
      if (meta.namespace) involvedObject.namespace = meta.namespace;
      const event = {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: aggregate.name, namespace: aggregate.namespace },
        involvedObject,
        type,
        reason,
        message,
        count,
        firstTimestamp: aggregate.firstTimestamp,
        lastTimestamp: now,
        source: { component: this.component, host: this.host },
        reportingComponent: this.component,
        reportingInstance: this.host,
      };
      // Dates are strings on the wire; client-node's model types them as Date.
      await this.client.create(
        EventResource,
        event as unknown as Parameters<KubeClient["create"]>[1],
      );
    } catch (error) {
      this.log.warn({ err: error, reason, object: meta.name }, "could not record event");
    }
  }
}
