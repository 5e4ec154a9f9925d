import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import { type Clock, systemClock } from "./clock.js";
import { NotFoundError } from "./errors.js";
import { type RuntimeLogger, silentLogger } from "./logging.js";
import { redactText } from "./redact.js";
import { EventResource } from "./resource.js";
import { cutText, safeText } from "./text.js";

/** `Normal` for routine, `Warning` for something the user should look at. */
export type EventType = "Normal" | "Warning";

interface Aggregate {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  chain: Promise<void>;
}

/** Distinct messages of one object, type and reason within the aggregation window. */
interface Similar {
  since: number;
  messages: Set<string>;
}

/** A token bucket of Events per object (client-go's spam filter). */
interface Bucket {
  tokens: number;
  at: number;
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

const NUL = "\u0000";
/** client-go's EventAggregator: more than 10 distinct messages in 10 minutes are combined. */
const MAX_SIMILAR = 10;
const SIMILAR_WINDOW_MS = 10 * 60_000;
/** client-go's spam filter: a burst of 25 Events per object, then one per 5 minutes. */
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60_000;
const COMBINED = "(combined from similar events): ";

/**
 * The longest Event message recorded, in characters: events.k8s.io/v1 refuses a `note` over 1 KiB,
 * and a message is read in `kubectl describe`, where a longer one only hides the next.
 */
const MAX_MESSAGE = 1024;

/**
 * Records core v1 Events about objects, with client-go's event correlator:
 * - repeats of the same event (same object, type, reason and message) are one Event whose `count`
 *   and `lastTimestamp` advance, instead of a new object each time;
 * - similar events (same object, type and reason, other messages: "instance i-1 failed", "instance
 *   i-2 failed", …) beyond 10 distinct messages in 10 minutes become one Event with the message
 *   `(combined from similar events): <latest>`;
 * - each object gets a burst of 25 Events, then one per 5 minutes (the spam filter); the rest are
 *   dropped with a debug log line.
 *
 * Recording never throws and never blocks a reconcile; failures are logged.
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
  private readonly similar = new Map<string, Similar>();
  private readonly buckets = new Map<string, Bucket>();
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
    // Events are readable by anyone who can list them: the redaction layer runs on every message,
    // and what a cloud or tenant wrote loses its control and format characters (ANSI escapes, bidi
    // overrides) before anyone's terminal shows it.
    const trimmed = safeText(redactText(rawMessage), MAX_MESSAGE);
    const meta = obj.metadata ?? {};
    if (!meta.name) {
      this.log.warn({ reason }, "cannot record an event for an object without metadata.name");
      return;
    }
    const objectKey = [obj.apiVersion, obj.kind, meta.namespace, meta.name, meta.uid].join(NUL);
    const nowMs = this.clock.now();
    const now = new Date(nowMs).toISOString();
    if (!this.admit(objectKey, nowMs)) {
      this.log.debug({ reason, object: meta.name }, "event dropped by the spam filter");
      return;
    }
    const similarKey = [objectKey, type, reason].join(NUL);
    let similar = this.similar.get(similarKey);
    if (similar === undefined || nowMs - similar.since > SIMILAR_WINDOW_MS) {
      similar = { since: nowMs, messages: new Set() };
      this.remember(this.similar, similarKey, similar);
    }
    similar.messages.add(trimmed);
    const combined = similar.messages.size > MAX_SIMILAR;
    const shown = combined ? cutText(`${COMBINED}${trimmed}`, MAX_MESSAGE) : trimmed;
    const key = combined ? `${similarKey}${NUL}${COMBINED}` : `${similarKey}${NUL}${trimmed}`;
    let aggregate = this.aggregates.get(key);
    if (aggregate === undefined) {
      aggregate = {
        name: `${meta.name}.${Math.floor(nowMs).toString(16)}${randomBytes(2).toString("hex")}`,
        namespace: meta.namespace || "default",
        count: 0,
        firstTimestamp: now,
        chain: Promise.resolve(),
      };
      this.remember(this.aggregates, key, aggregate);
    }
    const target = aggregate;
    target.count++;
    const count = target.count;
    const write = target.chain.then(() =>
      this.write(obj, target, count, type, reason, shown, now, combined),
    );
    target.chain = write;
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  /** Takes a token of the object's bucket, refilled one per 5 minutes up to the burst. */
  private admit(objectKey: string, nowMs: number): boolean {
    let bucket = this.buckets.get(objectKey);
    if (bucket === undefined) {
      bucket = { tokens: SPAM_BURST, at: nowMs };
      this.remember(this.buckets, objectKey, bucket);
    }
    const refilled = Math.floor((nowMs - bucket.at) / SPAM_REFILL_MS);
    if (refilled > 0) {
      bucket.tokens = Math.min(SPAM_BURST, bucket.tokens + refilled);
      bucket.at += refilled * SPAM_REFILL_MS;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens--;
    return true;
  }

  /** Adds an entry to a bounded map, forgetting the oldest beyond `maxTracked`. */
  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.size >= this.maxTracked) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
    map.set(key, value);
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
    combined: boolean,
  ): Promise<void> {
    const meta = obj.metadata ?? {};
    try {
      if (count > 1) {
        try {
          // A combined Event shows the latest of the similar messages, as client-go's does.
          await this.client.mergePatch(
            EventResource,
            { namespace: aggregate.namespace, name: aggregate.name },
            combined ? { count, lastTimestamp: now, message } : { count, lastTimestamp: now },
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
