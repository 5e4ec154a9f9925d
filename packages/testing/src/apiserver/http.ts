import type { IncomingMessage, ServerResponse } from "node:http";
import { load as parseYaml } from "js-yaml";
import { AccessReviews } from "./access.js";
import type { ApiCore } from "./core.js";
import type { DeleteOptions, WriteOptions } from "./core-types.js";
import {
  ApiError,
  badRequest,
  methodNotSupported,
  pageNotFound,
  reasonForCode,
  unservedPath,
  unsupportedMediaType,
} from "./errors.js";
import { evictPod } from "./eviction.js";
import type { FaultRules, FaultTarget } from "./faults.js";
import { PATCH_TYPES } from "./patch-dispatch.js";
import { compareKubeVersions, groupVersion, type ResolvedResource } from "./registry.js";
import { parseFieldSelector, parseLabelSelector } from "./selectors.js";
import type { KubeObject, ResourceType } from "./types.js";
import { isObject } from "./values.js";
import { WatchHub, type WatchRequest } from "./watch.js";

/** One request as the server saw it (`api.requests()`). */
export interface RequestRecord {
  /** Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection), or the lower-case HTTP method for non-resource paths. */
  verb: string;
  method: string;
  path: string;
  query: Record<string, string>;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** HTTP status sent. */
  status: number;
  /** Request Content-Type (patches: which patch type). */
  contentType?: string;
  /** Parsed request body, if any. */
  body?: unknown;
  fieldManager?: string;
  userAgent?: string;
  /** When the request arrived. */
  startedAt: Date;
  /** Time to the response (for watches: how long the stream was open, updated when it ends). */
  durationMs: number;
  /** Whether an injected fault answered or delayed it. */
  fault?: boolean;
}

const KUBE_VERSION = {
  major: "1",
  minor: "35",
  gitVersion: "v1.35.0-capi-ts-inmemory",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2026-01-01T00:00:00Z",
  goVersion: "n/a",
  compiler: "node",
  platform: `${process.platform}/${process.arch}`,
};

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

interface Route {
  kind: "resource";
  group: string;
  version: string;
  plural: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

type Parsed =
  | Route
  | { kind: "discovery-core" }
  | { kind: "discovery-groups" }
  | { kind: "discovery-group"; group: string }
  | { kind: "discovery-resources"; group: string; version: string }
  | { kind: "text"; body: string }
  | { kind: "version" }
  | { kind: "notfound" };

function parsePath(path: string): Parsed {
  const segs = path
    .split("/")
    .filter((s) => s !== "")
    .map(decodeURIComponent);
  if (segs.length === 0) return { kind: "notfound" };
  const head = segs[0];
  if (["healthz", "readyz", "livez"].includes(head ?? "") && segs.length <= 2) {
    return { kind: "text", body: "ok" };
  }
  if (head === "version" && segs.length === 1) return { kind: "version" };
  let group: string;
  let version: string;
  let rest: string[];
  if (head === "api") {
    if (segs.length === 1) return { kind: "discovery-core" };
    group = "";
    version = segs[1] ?? "";
    rest = segs.slice(2);
  } else if (head === "apis") {
    if (segs.length === 1) return { kind: "discovery-groups" };
    if (segs.length === 2) return { kind: "discovery-group", group: segs[1] ?? "" };
    group = segs[1] ?? "";
    version = segs[2] ?? "";
    rest = segs.slice(3);
  } else {
    return { kind: "notfound" };
  }
  if (rest.length === 0) return { kind: "discovery-resources", group, version };
  if (
    rest[0] === "namespaces" &&
    rest.length >= 3 &&
    !["status", "finalize"].includes(rest[2] ?? "")
  ) {
    const [, namespace, plural, name, subresource, ...extra] = rest;
    if (extra.length > 0 || !plural) return { kind: "notfound" };
    return { kind: "resource", group, version, plural, namespace, name, subresource };
  }
  const [plural, name, subresource, ...extra] = rest;
  if (extra.length > 0 || !plural) return { kind: "notfound" };
  return { kind: "resource", group, version, plural, name, subresource };
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-cache, private",
    ...headers,
  });
  res.end(body);
}

function sendError(res: ServerResponse, err: ApiError): void {
  if (err.plainText) {
    const text = `${err.message}\n`;
    res.writeHead(err.code, {
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
      "Content-Length": Buffer.byteLength(text),
    });
    res.end(text);
    return;
  }
  const headers: Record<string, string> = { ...err.headers };
  const retry = err.details?.retryAfterSeconds;
  if (retry !== undefined) headers["Retry-After"] = String(retry);
  sendJson(res, err.code, JSON.stringify(err.toStatus()), headers);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > 3 * 1024 * 1024) {
      throw new ApiError(
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
      );
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseBody(text: string, contentType: string): unknown {
  if (text.trim() === "") return undefined;
  if (contentType === PATCH_TYPES.apply || contentType === "application/yaml") {
    try {
      return parseYaml(text);
    } catch (e) {
      throw badRequest(`error decoding YAML: ${(e as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}

function boolParam(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  return v === "true" || v === "1";
}

function intParam(name: string, v: string | undefined): number | undefined {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw badRequest(`invalid value for ${name}: "${v}"`);
  return n;
}

/** Serves the Kubernetes REST API over node:http on top of {@link ApiCore}. */
export class HttpFrontend {
  readonly log: RequestRecord[] = [];
  port = 0;
  /** The log keeps the most recent this many requests. */
  logLimit = 100_000;
  /** Answers to TokenReview and SubjectAccessReview. */
  readonly access = new AccessReviews();

  constructor(
    private readonly core: ApiCore,
    readonly watches: WatchHub,
    private readonly faults: FaultRules,
  ) {}

  handle = (req: IncomingMessage, res: ServerResponse): void => {
    void this.serve(req, res).catch((e: unknown) => {
      if (!res.headersSent) {
        sendError(
          res,
          new ApiError(500, "InternalError", `Internal error occurred: ${(e as Error).message}`),
        );
      } else {
        res.destroy();
      }
    });
  };

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = new URL(req.url ?? "/", "http://localhost");
    const query = Object.fromEntries(url.searchParams.entries());
    const method = (req.method ?? "GET").toUpperCase();
    const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
    const parsed = parsePath(url.pathname);
    const record: RequestRecord = {
      verb: method.toLowerCase(),
      method,
      path: url.pathname,
      query,
      status: 0,
      startedAt: new Date(),
      durationMs: 0,
      userAgent: req.headers["user-agent"],
    };
    if (contentType) record.contentType = contentType;
    if (query.fieldManager) record.fieldManager = query.fieldManager;
    if (parsed.kind === "resource") {
      record.group = parsed.group;
      record.version = parsed.version;
      record.resource = parsed.plural;
      if (parsed.subresource) record.subresource = parsed.subresource;
      if (parsed.namespace) record.namespace = parsed.namespace;
      if (parsed.name) record.name = parsed.name;
      record.verb = kubeVerb(method, parsed, query);
    }
    this.log.push(record);
    if (this.log.length > this.logLimit) this.log.splice(0, this.log.length - this.logLimit);
    res.on("close", () => {
      record.durationMs = performance.now() - started;
      record.status ||= res.statusCode;
    });
    res.on("finish", () => {
      record.status = res.statusCode;
    });
    let text = "";
    if (method !== "GET" && method !== "HEAD") text = await readBody(req);
    try {
      const body = parseBody(text, contentType);
      if (body !== undefined) record.body = body;
      const target: FaultTarget = {
        verb: record.verb,
        resource: record.resource,
        group: record.group,
        subresource: record.subresource,
        namespace: record.namespace,
        name: record.name,
      };
      const fault = this.faults.pick(target);
      if (fault) {
        record.fault = true;
        if (fault.latencyMs) await new Promise((r) => setTimeout(r, fault.latencyMs));
        if (fault.dropConnection) {
          record.status = -1;
          req.socket.destroy();
          return;
        }
        if (fault.status !== undefined) {
          const details =
            fault.retryAfterSeconds !== undefined
              ? { retryAfterSeconds: fault.retryAfterSeconds }
              : undefined;
          const reason = fault.reason ?? reasonForCode(fault.status);
          const message = fault.message ?? defaultFaultMessage(fault.status, record);
          throw new ApiError(fault.status, reason, message, details);
        }
      }
      this.route(parsed, method, query, contentType, body, req, res, record);
    } catch (e) {
      if (e instanceof ApiError) {
        sendError(res, e);
        record.status = e.code;
        return;
      }
      throw e;
    }
  }

  private route(
    parsed: Parsed,
    method: string,
    query: Record<string, string>,
    contentType: string,
    body: unknown,
    _req: IncomingMessage,
    res: ServerResponse,
    record: RequestRecord,
  ): void {
    switch (parsed.kind) {
      case "text":
        res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
        res.end(parsed.body);
        return;
      case "version":
        sendJson(res, 200, JSON.stringify(KUBE_VERSION));
        return;
      case "discovery-core":
        sendJson(
          res,
          200,
          JSON.stringify({
            kind: "APIVersions",
            versions: ["v1"],
            serverAddressByClientCIDRs: [
              { clientCIDR: "0.0.0.0/0", serverAddress: `127.0.0.1:${this.port}` },
            ],
          }),
        );
        return;
      case "discovery-groups":
        sendJson(
          res,
          200,
          JSON.stringify({
            kind: "APIGroupList",
            apiVersion: "v1",
            groups: this.core.registry
              .groups()
              .filter((g) => g.name !== "")
              .map((g) => this.apiGroup(g.name, g.versions)),
          }),
        );
        return;
      case "discovery-group": {
        const g = this.core.registry.groups().find((x) => x.name === parsed.group && x.name !== "");
        if (!g) throw unservedPath();
        sendJson(
          res,
          200,
          JSON.stringify({
            kind: "APIGroup",
            apiVersion: "v1",
            ...this.apiGroup(g.name, g.versions),
          }),
        );
        return;
      }
      case "discovery-resources": {
        const list = this.core.registry.resourcesOf(parsed.group, parsed.version);
        if (!list) throw unservedPath();
        sendJson(
          res,
          200,
          JSON.stringify({
            kind: "APIResourceList",
            apiVersion: "v1",
            groupVersion: groupVersion(parsed.group, parsed.version),
            resources: list.flatMap((r) => this.discoveryEntries(r)),
          }),
        );
        return;
      }
      case "notfound":
        throw unservedPath();
      case "resource":
        if (this.review(parsed, method, body, res)) return;
        this.resource(parsed, method, query, contentType, body, res, record);
        return;
    }
  }

  private apiGroup(name: string, versions: string[]) {
    const sorted = [...versions].sort(compareKubeVersions);
    const entries = sorted.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    return { name, versions: entries, preferredVersion: entries[0] };
  }

  private discoveryEntries(r: ResolvedResource): Record<string, unknown>[] {
    const rt = r.rt;
    const main: Record<string, unknown> = {
      name: rt.plural,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: VERBS,
    };
    if (rt.shortNames.length > 0) main.shortNames = rt.shortNames;
    if (rt.categories.length > 0) main.categories = rt.categories;
    const out = [main];
    if (rt.statusSubresource) {
      out.push({
        name: `${rt.plural}/status`,
        singularName: "",
        namespaced: rt.namespaced,
        kind: rt.kind,
        verbs: ["get", "patch", "update"],
      });
    }
    if (isPods(rt)) {
      out.push({
        name: "pods/eviction",
        singularName: "",
        namespaced: true,
        group: "policy",
        version: "v1",
        kind: "Eviction",
        verbs: ["create"],
      });
    }
    if (rt.scale) {
      out.push({
        name: `${rt.plural}/scale`,
        singularName: "",
        namespaced: rt.namespaced,
        group: "autoscaling",
        version: "v1",
        kind: "Scale",
        verbs: ["get", "patch", "update"],
      });
    }
    return out;
  }

  /** `/scale`: an autoscaling/v1 Scale view of the replicas fields the CRD names. */
  private scale(
    resolved: ResolvedResource,
    namespace: string,
    name: string,
    method: string,
    contentType: string,
    body: unknown,
    write: WriteOptions,
    res: ServerResponse,
  ): void {
    switch (method) {
      case "GET":
        sendJson(res, 200, JSON.stringify(this.core.getScale(resolved, namespace, name)));
        return;
      case "PUT":
        sendJson(
          res,
          200,
          JSON.stringify(this.core.updateScale(resolved, namespace, name, body, write)),
        );
        return;
      case "PATCH": {
        if (contentType !== PATCH_TYPES.merge && contentType !== PATCH_TYPES.json) {
          throw unsupportedMediaType(contentType, [PATCH_TYPES.json, PATCH_TYPES.merge]);
        }
        const current = this.core.getScale(resolved, namespace, name);
        const patched = this.core.patchValue(current, contentType, body, resolved.rt);
        sendJson(
          res,
          200,
          JSON.stringify(this.core.updateScale(resolved, namespace, name, patched, write)),
        );
        return;
      }
      default:
        throw methodNotSupported();
    }
  }

  /** TokenReview and SubjectAccessReview: created, answered, never stored (as kube-apiserver). */
  private review(route: Route, method: string, body: unknown, res: ServerResponse): boolean {
    const kind =
      route.group === "authentication.k8s.io" && route.plural === "tokenreviews"
        ? "token"
        : route.group === "authorization.k8s.io" && route.plural === "subjectaccessreviews"
          ? "access"
          : undefined;
    if (!kind || route.version !== "v1" || route.name !== undefined) return false;
    if (method !== "POST")
      throw new ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
      );
    const answer =
      kind === "token" ? this.access.tokenReview(body) : this.access.subjectAccessReview(body);
    sendJson(res, 201, JSON.stringify(answer));
    return true;
  }

  private resource(
    route: Route,
    method: string,
    query: Record<string, string>,
    contentType: string,
    body: unknown,
    res: ServerResponse,
    record: RequestRecord,
  ): void {
    const resolved = this.core.registry.lookup(route.group, route.version, route.plural);
    if (!resolved) {
      // A built-in group/version answers a Status; an unknown one, or one served only by CRDs
      // (apiextensions delegates to the mux), the mux's plain-text 404.
      const served = this.core.registry.resourcesOf(route.group, route.version);
      if (served?.some((r) => r.rt.crdName === undefined)) throw pageNotFound();
      throw unservedPath();
    }
    const rt = resolved.rt;
    if (route.namespace !== undefined && !rt.namespaced) throw pageNotFound();
    const namespace = route.namespace ?? "";
    if (rt.namespaced && route.name !== undefined && route.namespace === undefined)
      throw pageNotFound();
    if (
      route.subresource !== undefined &&
      !(route.subresource === "status" && rt.statusSubresource) &&
      !(route.subresource === "scale" && rt.scale) &&
      !(route.subresource === "eviction" && isPods(rt))
    ) {
      throw pageNotFound();
    }
    const dryRun = query.dryRun === "All";
    if (query.dryRun !== undefined && query.dryRun !== "All") {
      throw badRequest(`Invalid dry run value: ${query.dryRun}: valid values: All`);
    }
    const write = {
      dryRun,
      fieldManager: query.fieldManager,
      subresource: route.subresource,
      userAgent: record.userAgent,
    };
    const respond = (status: number, obj: KubeObject) =>
      sendJson(res, status, this.core.toJson(resolved, obj));

    if (route.name === undefined) {
      const labels = parseLabelSelector(query.labelSelector);
      const fields = parseFieldSelector(query.fieldSelector, rt.fieldSelectors);
      const listNamespace = route.namespace;
      if (method === "GET") {
        if (boolParam(query.watch)) {
          const wreq: WatchRequest = {
            res: resolved,
            namespace: listNamespace,
            labels,
            fields,
            resourceVersion: query.resourceVersion,
            resourceVersionMatch: query.resourceVersionMatch,
            allowBookmarks: boolParam(query.allowWatchBookmarks) === true,
            sendInitialEvents: boolParam(query.sendInitialEvents),
            timeoutSeconds: intParam("timeoutSeconds", query.timeoutSeconds),
          };
          WatchHub.check(wreq);
          record.status = 200;
          this.watches.open(wreq, res);
          return;
        }
        const limit = intParam("limit", query.limit);
        if (labels.length === 0 && fields.length === 0 && !limit && !query.continue) {
          const rv = this.core.store.currentRevision;
          const items = this.core.listItemsText(resolved, listNamespace);
          const text = `{"apiVersion":${JSON.stringify(resolved.apiVersion)},"kind":${JSON.stringify(rt.listKind)},"metadata":{"resourceVersion":"${rv}"},"items":[${items}]}`;
          sendJson(res, 200, text);
          return;
        }
        const result = this.core.list(resolved, {
          namespace: listNamespace,
          labels,
          fields,
          limit,
          continueToken: query.continue,
        });
        const meta: string[] = [`"resourceVersion":"${result.resourceVersion}"`];
        if (result.continueToken) {
          meta.push(`"continue":"${result.continueToken}"`);
          meta.push(`"remainingItemCount":${result.remaining ?? 0}`);
        }
        const items = result.items.map((s) => this.core.renderListItem(resolved, s)).join(",");
        const text = `{"apiVersion":${JSON.stringify(resolved.apiVersion)},"kind":${JSON.stringify(rt.listKind)},"metadata":{${meta.join(",")}},"items":[${items}]}`;
        sendJson(res, 200, text);
        return;
      }
      if (method === "POST") {
        if (rt.namespaced && route.namespace === undefined) throw methodNotSupported();
        respond(201, this.core.create(resolved, namespace, body, write));
        return;
      }
      if (method === "DELETE") {
        const deleted = this.core.deleteCollection(
          resolved,
          { namespace: listNamespace, labels, fields },
          deleteOptions(body, query),
        );
        const text = `{"apiVersion":${JSON.stringify(resolved.apiVersion)},"kind":${JSON.stringify(rt.listKind)},"metadata":{"resourceVersion":"${this.core.store.currentRevision}"},"items":[${deleted.map((o) => this.core.listItemJson(resolved, o)).join(",")}]}`;
        sendJson(res, 200, text);
        return;
      }
      throw methodNotSupported();
    }

    const name = route.name;
    if (route.subresource === "scale") {
      this.scale(resolved, namespace, name, method, contentType, body, write, res);
      return;
    }
    if (route.subresource === "eviction") {
      if (method !== "POST") throw methodNotSupported();
      sendJson(res, 201, JSON.stringify(evictPod(this.core, namespace, name, body)));
      return;
    }
    switch (method) {
      case "GET":
        sendJson(res, 200, this.core.render(resolved, this.core.get(resolved, namespace, name)));
        return;
      case "PUT": {
        const { object } = this.core.update(resolved, namespace, name, body, write);
        respond(200, object);
        return;
      }
      case "PATCH": {
        if (!Object.values(PATCH_TYPES).includes(contentType as never)) {
          throw unsupportedMediaType(contentType, this.core.patchTypes(rt));
        }
        const { object, created } = this.core.patch(resolved, namespace, name, contentType, body, {
          ...write,
          force: boolParam(query.force),
        });
        respond(created ? 201 : 200, object);
        return;
      }
      case "DELETE": {
        if (route.subresource !== undefined) throw methodNotSupported();
        const { object, deleted } = this.core.delete(
          resolved,
          namespace,
          name,
          deleteOptions(body, query),
        );
        if (!deleted || rt.returnDeletedObject) {
          respond(200, object);
          return;
        }
        sendJson(
          res,
          200,
          JSON.stringify({
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Success",
            details: {
              name,
              group: rt.group || undefined,
              kind: rt.plural,
              uid: object.metadata.uid,
            },
          }),
        );
        return;
      }
      default:
        throw methodNotSupported();
    }
  }
}

/** Core Pods: the only kind with an `eviction` subresource. */
function isPods(rt: ResourceType): boolean {
  return rt.group === "" && rt.plural === "pods";
}

function kubeVerb(method: string, route: Route, query: Record<string, string>): string {
  const collection = route.name === undefined;
  switch (method) {
    case "GET":
      if (collection) return boolParam(query.watch) ? "watch" : "list";
      return "get";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return collection ? "deletecollection" : "delete";
    default:
      return method.toLowerCase();
  }
}

function deleteOptions(body: unknown, query: Record<string, string>): DeleteOptions {
  const b = isObject(body) ? body : {};
  const policy = (b.propagationPolicy ?? query.propagationPolicy) as string | undefined;
  if (policy !== undefined && !["Background", "Foreground", "Orphan"].includes(policy)) {
    throw badRequest(
      `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
    );
  }
  const out: DeleteOptions = {};
  if (policy) out.propagationPolicy = policy as DeleteOptions["propagationPolicy"];
  const orphan = b.orphanDependents ?? boolParam(query.orphanDependents);
  if (typeof orphan === "boolean") out.orphanDependents = orphan;
  if (isObject(b.preconditions))
    out.preconditions = b.preconditions as DeleteOptions["preconditions"];
  const dryRun = Array.isArray(b.dryRun) ? b.dryRun.includes("All") : query.dryRun === "All";
  if (dryRun) out.dryRun = true;
  return out;
}

function defaultFaultMessage(status: number, record: RequestRecord): string {
  switch (status) {
    case 429:
      return "Too many requests, please try again later.";
    case 503:
      return "the server is currently unable to handle the request";
    case 409:
      return `Operation cannot be fulfilled on ${record.resource ?? "resource"} "${record.name ?? ""}": injected conflict`;
    default:
      return `injected fault: ${status} for ${record.verb} ${record.path}`;
  }
}
