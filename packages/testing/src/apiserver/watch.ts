import type { ServerResponse } from "node:http";
import type { ApiCore } from "./core.js";
import { badRequest, expired, invalid, statusBody } from "./errors.js";
import type { ResolvedResource } from "./registry.js";
import {
  type FieldRequirement,
  type LabelRequirement,
  matchesFields,
  matchesLabels,
} from "./selectors.js";
import type { ChangeEvent, StoredObject } from "./store.js";
import type { KubeObject } from "./types.js";

/** What a client asked for with `?watch=1`. */
export interface WatchRequest {
  res: ResolvedResource;
  namespace: string | undefined;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  resourceVersion: string | undefined;
  resourceVersionMatch: string | undefined;
  allowBookmarks: boolean;
  sendInitialEvents: boolean | undefined;
  timeoutSeconds: number | undefined;
}

/** A watch stream being served. */
interface Watcher {
  req: WatchRequest;
  response: ServerResponse;
  timer: NodeJS.Timeout | undefined;
  closed: boolean;
}

/** Above this many unsent bytes a watcher is too slow and is closed, as the real cacher does. */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** Fans committed changes out to watch streams; replays from the window; sends bookmarks. */
export class WatchHub {
  private readonly byStorage = new Map<string, Set<Watcher>>();
  private readonly rendered = new WeakMap<ChangeEvent, Map<string, string>>();
  private bookmarkTimer: NodeJS.Timeout | undefined;
  /** Events written to watch streams since start (for the benchmark). */
  delivered = 0;

  constructor(
    private readonly core: ApiCore,
    private readonly options: { bookmarkIntervalMs: number; defaultTimeoutSeconds: number },
  ) {
    core.onChange((event) => this.dispatch(event));
    this.bookmarkTimer = setInterval(() => this.sendBookmarks(), options.bookmarkIntervalMs);
    this.bookmarkTimer.unref();
  }

  get openWatches(): number {
    let n = 0;
    for (const set of this.byStorage.values()) n += set.size;
    return n;
  }

  /** Validates a watch request up front, so errors are plain HTTP errors, not stream events. */
  static check(req: WatchRequest): void {
    if (req.sendInitialEvents !== undefined) {
      if (req.sendInitialEvents && !req.allowBookmarks) {
        throw invalid("", "ListOptions", "", [
          {
            field: "allowWatchBookmarks",
            reason: "FieldValueRequired",
            message: "Required value: allowWatchBookmarks required when sendInitialEvents is true",
          },
        ]);
      }
      if (req.resourceVersionMatch !== "NotOlderThan") {
        throw invalid("", "ListOptions", "", [
          {
            field: "resourceVersionMatch",
            reason: "FieldValueForbidden",
            message:
              "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
          },
        ]);
      }
    } else if (req.resourceVersionMatch !== undefined) {
      throw invalid("", "ListOptions", "", [
        {
          field: "resourceVersionMatch",
          reason: "FieldValueForbidden",
          message:
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        },
      ]);
    }
    if (
      req.resourceVersion !== undefined &&
      req.resourceVersion !== "" &&
      !/^\d+$/.test(req.resourceVersion)
    ) {
      throw badRequest(`invalid resource version: "${req.resourceVersion}"`);
    }
  }

  /** Starts streaming: initial state or replay, then live changes. */
  open(req: WatchRequest, response: ServerResponse): void {
    response.writeHead(200, {
      "Content-Type": "application/json",
      "Cache-Control": "no-cache, private",
      "Transfer-Encoding": "chunked",
    });
    response.flushHeaders();
    const watcher: Watcher = { req, response, timer: undefined, closed: false };
    const rvParam = req.resourceVersion;
    const fromNow = rvParam === undefined || rvParam === "" || rvParam === "0";
    if (req.sendInitialEvents === true || (req.sendInitialEvents === undefined && fromNow)) {
      const minRv = fromNow ? 0 : Number(rvParam);
      if (minRv > this.core.store.currentRevision) {
        this.writeError(
          watcher,
          504,
          "Timeout",
          `Too large resource version: ${minRv}, current: ${this.core.store.currentRevision}`,
        );
        return;
      }
      const { items } = this.core.list(req.res, {
        namespace: req.namespace,
        labels: req.labels,
        fields: req.fields,
      });
      for (const s of items) this.write(watcher, "ADDED", this.core.render(req.res, s));
      if (req.sendInitialEvents === true) this.writeBookmark(watcher, true);
    } else if (!fromNow) {
      const since = Number(rvParam);
      const changes = this.core.store.changesSince(req.res.rt.storageKey, since);
      if (changes === undefined) {
        const oldest = this.core.store.oldestWatchableRevision(req.res.rt.storageKey);
        this.writeError(watcher, 410, "Expired", `too old resource version: ${since} (${oldest})`);
        return;
      }
      for (const c of changes) this.deliver(watcher, c);
    }
    let set = this.byStorage.get(req.res.rt.storageKey);
    if (!set) {
      set = new Set();
      this.byStorage.set(req.res.rt.storageKey, set);
    }
    set.add(watcher);
    const timeout = req.timeoutSeconds ?? this.options.defaultTimeoutSeconds;
    if (timeout > 0) {
      watcher.timer = setTimeout(() => this.end(watcher), timeout * 1000);
      watcher.timer.unref();
    }
    response.on("close", () => this.forget(watcher));
  }

  private dispatch(event: ChangeEvent): void {
    const set = this.byStorage.get(event.storageKey);
    if (!set) return;
    for (const w of set) this.deliver(w, event);
  }

  private deliver(w: Watcher, event: ChangeEvent): void {
    const req = w.req;
    if (req.res.rt.namespaced && req.namespace && event.namespace !== req.namespace) return;
    let type: string = event.type;
    if (req.labels.length > 0 || req.fields.length > 0) {
      const now = this.matches(req, event.object.obj);
      if (event.type === "MODIFIED") {
        const before = event.previous ? this.matches(req, event.previous.obj) : false;
        if (!now && !before) return;
        if (now && !before) type = "ADDED";
        if (!now && before) type = "DELETED";
      } else if (!now) {
        return;
      }
    }
    this.write(w, type, this.renderEvent(req.res, event));
  }

  private matches(req: WatchRequest, obj: KubeObject): boolean {
    if (req.labels.length > 0 && !matchesLabels(req.labels, obj.metadata.labels)) return false;
    if (req.fields.length > 0 && !matchesFields(req.fields, obj)) return false;
    return true;
  }

  private renderEvent(res: ResolvedResource, event: ChangeEvent): string {
    let byVersion = this.rendered.get(event);
    if (!byVersion) {
      byVersion = new Map();
      this.rendered.set(event, byVersion);
    }
    let text = byVersion.get(res.apiVersion);
    if (text === undefined) {
      text = this.core.render(res, event.object as StoredObject);
      byVersion.set(res.apiVersion, text);
    }
    return text;
  }

  private write(w: Watcher, type: string, objectJson: string): void {
    if (w.closed) return;
    w.response.write(`{"type":"${type}","object":${objectJson}}\n`);
    this.delivered++;
    if (w.response.writableLength > MAX_BUFFERED_BYTES) this.end(w);
  }

  private writeBookmark(w: Watcher, initialEventsEnd: boolean): void {
    const metadata: Record<string, unknown> = {
      resourceVersion: String(this.core.store.currentRevision),
    };
    if (initialEventsEnd) metadata.annotations = { "k8s.io/initial-events-end": "true" };
    const obj = { kind: w.req.res.rt.kind, apiVersion: w.req.res.apiVersion, metadata };
    this.write(w, "BOOKMARK", JSON.stringify(obj));
  }

  private writeError(w: Watcher, code: number, reason: string, message: string): void {
    w.response.write(
      `${JSON.stringify({ type: "ERROR", object: statusBody(code, reason, message) })}\n`,
    );
    this.end(w);
  }

  private sendBookmarks(): void {
    for (const set of this.byStorage.values()) {
      for (const w of set) if (w.req.allowBookmarks) this.writeBookmark(w, false);
    }
  }

  /** Ends a stream cleanly (the client sees a normal end of response). */
  private end(w: Watcher): void {
    if (w.closed) return;
    w.closed = true;
    this.forget(w);
    w.response.end();
  }

  private forget(w: Watcher): void {
    w.closed = true;
    if (w.timer) clearTimeout(w.timer);
    this.byStorage.get(w.req.res.rt.storageKey)?.delete(w);
  }

  private select(filter: { resource?: string } | undefined): Watcher[] {
    const out: Watcher[] = [];
    for (const set of this.byStorage.values()) {
      for (const w of set) {
        if (filter?.resource && w.req.res.rt.plural !== filter.resource) continue;
        out.push(w);
      }
    }
    return out;
  }

  /** Cuts open watch streams: abruptly (socket destroyed) unless `graceful`. */
  cut(filter?: { resource?: string; graceful?: boolean }): number {
    const targets = this.select(filter);
    for (const w of targets) {
      if (filter?.graceful) {
        this.end(w);
      } else {
        this.forget(w);
        w.response.socket?.destroy();
        w.response.destroy();
      }
    }
    return targets.length;
  }

  /** Sends every open watch a 410 ERROR event and ends it (the window was expired). */
  expireAll(): void {
    for (const w of this.select(undefined)) {
      const oldest = this.core.store.oldestWatchableRevision(w.req.res.rt.storageKey);
      this.write(
        w,
        "ERROR",
        JSON.stringify(expired(`too old resource version: ${oldest - 1} (${oldest})`).toStatus()),
      );
      this.end(w);
    }
  }

  /** Ends watches whose resource is no longer served (its CRD changed or went away). */
  closeUnserved(): void {
    for (const w of this.select(undefined)) {
      const { rt, served } = w.req.res;
      const now = this.core.registry.lookup(rt.group, served.version, rt.plural);
      if (!now || now.rt !== rt) this.end(w);
    }
  }

  stop(): void {
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
    for (const w of this.select(undefined)) this.end(w);
  }
}
