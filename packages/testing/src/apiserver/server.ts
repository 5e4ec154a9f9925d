import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import { extname, join } from "node:path";
import type { KubeObject as SdkKubeObject } from "@capi-ts/sdk/patch";
import { selfSignedCertificate } from "@capi-ts/sdk/runtime";
import { KubeConfig } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import type { AccessReviews } from "./access.js";
import { BUILTIN_TYPES, namespaces } from "./builtins.js";
import { ApiCore } from "./core.js";
import { CrdController, crdResourceType, validateCrd } from "./crd.js";
import { defaultEngines, type Engines } from "./engines.js";
import { ApiError } from "./errors.js";
import { type FaultHandle, type FaultRule, FaultRules, type Faults } from "./faults.js";
import { HttpFrontend, type RequestRecord } from "./http.js";
import { storageView } from "./registry.js";
import type { KubeObject } from "./types.js";
import { WatchHub } from "./watch.js";

/** Options of {@link startApiServer}. */
export interface ApiServerOptions {
  /** Port on 127.0.0.1; 0 (the default) picks a free one. */
  port?: number;
  /** How many changes the watch window keeps for replay (default 10,000); older resourceVersions get 410. */
  watchWindow?: number;
  /** Interval between BOOKMARK events on watches that allow them (default 1,000 ms). */
  bookmarkIntervalMs?: number;
  /** Server-side watch timeout when the client sends no `timeoutSeconds` (default 1,800 s; 0 = none). */
  watchTimeoutSeconds?: number;
  /** CRDs to install before the server is returned (files, folders or objects, as {@link ApiServer.installCRDs}). */
  crds?: CrdSource[];
  /** The clock for timestamps (default: the system clock). */
  clock?: () => Date;
  /** How many requests the request log keeps, newest last (default 100,000). */
  requestLogLimit?: number;
  /** Namespaces created at start (default: default, kube-system, kube-public, kube-node-lease). */
  namespaces?: string[];
  /**
   * Serve HTTPS with a self-signed certificate made at start (for 127.0.0.1 and localhost); the
   * kubeconfig carries it as `certificate-authority-data`, as a real cluster's does. A workload
   * cluster needs it: the SDK's ClusterCache refuses a kubeconfig whose server is not `https://`.
   * Default false (plain HTTP).
   */
  tls?: boolean;
}

/** A CRD YAML file, a folder of them, or a CRD object. */
export type CrdSource = string | Record<string, unknown>;

/** A filter for {@link ApiServer.requests}: every given field must match, or a predicate. */
export type RequestFilter =
  | Partial<
      Pick<
        RequestRecord,
        | "verb"
        | "resource"
        | "subresource"
        | "namespace"
        | "name"
        | "group"
        | "status"
        | "contentType"
        | "fieldManager"
      >
    >
  | ((record: RequestRecord) => boolean);

/** A running in-memory API server (see {@link startApiServer}). */
export interface ApiServer {
  /** A client-node `KubeConfig` pointing at the server (context `capi-ts`, namespace `default`). */
  readonly kubeConfig: KubeConfig;
  /** `http://127.0.0.1:PORT` (`https://` with {@link ApiServerOptions.tls}). */
  readonly url: string;
  /** Writes a kubeconfig file for the server (for kubectl or a child process). */
  writeKubeconfig(path: string): Promise<void>;
  /** Installs CRDs from YAML files, folders of YAML files, or objects, and waits until they are served. */
  installCRDs(sources: CrdSource | CrdSource[]): Promise<SdkKubeObject[]>;
  /** The request log, oldest first, optionally filtered. */
  requests(filter?: RequestFilter): RequestRecord[];
  /** Empties the request log. */
  clearRequests(): void;
  /** Fault injection. */
  readonly faults: Faults;
  /** What TokenReview and SubjectAccessReview answer (tokens and non-resource grants). */
  readonly access: AccessReviews;
  /** Drops every connection (watches included) and listens again on the same port; state is kept. */
  restart(): Promise<void>;
  /** Stops the server and drops every connection. */
  stop(): Promise<void>;
  /** The current global resourceVersion. */
  readonly resourceVersion: string;
  /** Number of open watch streams. */
  readonly openWatches: number;
  /** Watch events written to clients since start. */
  readonly watchEventsDelivered: number;
}

async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once("error", onError);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string")
    throw new Error("the API server did not bind a TCP port");
  return address.port;
}

async function loadCrdSources(sources: CrdSource[]): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const source of sources) {
    if (typeof source !== "string") {
      out.push(source);
      continue;
    }
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(source);
    } catch {
      throw new Error(
        `installCRDs: ${source} does not exist; pass a CRD YAML file, a folder of them, or CRD objects`,
      );
    }
    const files = info.isDirectory()
      ? (await readdir(source))
          .filter((f) => [".yaml", ".yml", ".json"].includes(extname(f)))
          .sort()
          .map((f) => join(source, f))
      : [source];
    for (const file of files) {
      const text = await readFile(file, "utf8");
      let docs: unknown[];
      try {
        docs = loadAll(text);
      } catch (e) {
        throw new Error(`installCRDs: ${file} is not valid YAML: ${(e as Error).message}`);
      }
      for (const value of docs) {
        if (value === null || value === undefined) continue;
        if (typeof value !== "object" || Array.isArray(value)) {
          throw new Error(`installCRDs: ${file} holds a document that is not an object`);
        }
        out.push(value as Record<string, unknown>);
      }
    }
  }
  for (const o of out) {
    if (o.kind !== "CustomResourceDefinition" || o.apiVersion !== "apiextensions.k8s.io/v1") {
      throw new Error(
        `installCRDs: expected apiextensions.k8s.io/v1 CustomResourceDefinition, got ${String(o.apiVersion)} ${String(o.kind)}`,
      );
    }
  }
  return out;
}

function matchesFilter(r: RequestRecord, filter: RequestFilter | undefined): boolean {
  if (filter === undefined) return true;
  if (typeof filter === "function") return filter(r);
  for (const [k, v] of Object.entries(filter)) {
    if (v !== undefined && r[k as keyof RequestRecord] !== v) return false;
  }
  return true;
}

/**
 * Starts an in-memory Kubernetes API server on 127.0.0.1 that `@kubernetes/client-node` talks to
 * unmodified: discovery, CRUD with label/field selectors and paging, JSON merge / JSON / strategic
 * merge patch and server-side apply (with `managedFields` and conflicts), status and scale
 * subresources, finalizers, owner-reference garbage collection and namespace termination, CRDs with
 * structural-schema pruning, defaulting and validation (CEL included), and watches with replay,
 * bookmarks, `sendInitialEvents` and 410 Gone. Fault injection and a request log make controller
 * tests precise ("zero writes at steady state").
 *
 * @remarks
 * State lives in memory and survives {@link ApiServer.restart}; every write takes the next value of
 * one global resourceVersion counter. Known differences from kube-apiserver: no conversion webhooks
 * (other versions are served by rewriting `apiVersion`, then pruning with that version's schema),
 * paging does not pin a snapshot, no authentication/authorization of its own callers (TokenReview and
 * SubjectAccessReview answer from {@link ApiServer.access}) and no admission webhooks, only the
 * built-in kinds Namespace, Secret, ConfigMap, Node, Event, Lease and CustomResourceDefinition, and
 * garbage collection runs inside the server. `DIVERGENCES.md` in this package lists every difference
 * found by running the same suite on a real kube-apiserver.
 *
 * @example
 * ```ts
 * import { CoreV1Api, makeInformer, type V1ConfigMap } from "@kubernetes/client-node";
 * import { capiCrdsFolder, startApiServer } from "@capi-ts/testing";
 *
 * const api = await startApiServer();
 * await api.installCRDs([capiCrdsFolder]); // files, folders or objects
 * const core = api.kubeConfig.makeApiClient(CoreV1Api);
 * await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "x" } } });
 *
 * // An informer, as a controller would run it.
 * const informer = makeInformer<V1ConfigMap>(api.kubeConfig, "/api/v1/namespaces/default/configmaps",
 *   () => core.listNamespacedConfigMap({ namespace: "default" }));
 * await informer.start();
 *
 * // Faults: the next patch of a MachinePool answers 409; a forced relist; a server restart.
 * api.faults.add({ verb: "patch", resource: "machinepools", status: 409, count: 1 });
 * api.faults.expireWatchWindow();
 * await api.restart();
 *
 * // The request log: assert a reconcile at steady state wrote nothing.
 * api.clearRequests();
 * // ... run the reconcile ...
 * const writes = api.requests((r) => ["create", "update", "patch", "delete"].includes(r.verb));
 * console.assert(writes.length === 0);
 *
 * await informer.stop();
 * await api.stop();
 * ```
 */
export function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  return startApiServerWith(options, defaultEngines());
}

/**
 * {@link startApiServer} with the given schema and merge engines instead of the full set: a subset
 * serves without the features left out (see {@link Engines}).
 */
export async function startApiServerWith(
  options: ApiServerOptions,
  engines: Engines,
): Promise<ApiServer> {
  const core = new ApiCore(options.clock ?? (() => new Date()), options.watchWindow ?? 10_000);
  core.engines = engines;
  const compile = engines.compileSchema;
  const crdType = crdResourceType((obj) => validateCrd(obj, compile));
  for (const t of [...BUILTIN_TYPES, crdType]) core.registry.register(t);
  const crds = new CrdController(core, crdType, compile);
  const watches = new WatchHub(core, {
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 1000,
    defaultTimeoutSeconds: options.watchTimeoutSeconds ?? 1800,
  });
  crds.onTypesChanged = () => {
    core.invalidateListCache();
    watches.closeUnserved();
  };
  const rules = new FaultRules();
  const frontend = new HttpFrontend(core, watches, rules);
  frontend.logLimit = options.requestLogLimit ?? 100_000;
  const nsView = storageView(namespaces);
  for (const name of options.namespaces ?? [
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
  ]) {
    if (nsView) core.seed(nsView, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }

  const sockets = new Set<Socket>();
  const certificate = options.tls ? selfSignedCertificate(["127.0.0.1", "localhost"]) : undefined;
  const caData = certificate ? Buffer.from(certificate.cert).toString("base64") : undefined;
  const makeServer = (): Server => {
    const s = certificate
      ? (createTlsServer({ keepAlive: true, ...certificate }, frontend.handle) as unknown as Server)
      : createServer({ keepAlive: true }, frontend.handle);
    s.on("connection", (socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    return s;
  };
  let server = makeServer();
  const port = await listen(server, options.port ?? 0);
  frontend.port = port;
  const url = `${certificate ? "https" : "http"}://127.0.0.1:${port}`;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      caData
        ? { name: "capi-ts", server: url, caData, skipTLSVerify: false }
        : { name: "capi-ts", server: url, skipTLSVerify: true },
    ],
    users: [{ name: "capi-ts", token: "capi-ts-in-memory" }],
    contexts: [{ name: "capi-ts", cluster: "capi-ts", user: "capi-ts", namespace: "default" }],
    currentContext: "capi-ts",
  });

  const closeServer = async () => {
    watches.cut({});
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    server.closeAllConnections();
    await closed;
  };

  let stopped = false;
  const api: ApiServer = {
    kubeConfig,
    url,
    async writeKubeconfig(path: string) {
      await writeFile(
        path,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters:",
          "- name: capi-ts",
          "  cluster:",
          `    server: ${url}`,
          caData
            ? `    certificate-authority-data: ${caData}`
            : "    insecure-skip-tls-verify: true",
          "users:",
          "- name: capi-ts",
          "  user:",
          "    token: capi-ts-in-memory",
          "contexts:",
          "- name: capi-ts",
          "  context:",
          "    cluster: capi-ts",
          "    user: capi-ts",
          "    namespace: default",
          "current-context: capi-ts",
          "",
        ].join("\n"),
        "utf8",
      );
    },
    async installCRDs(sources) {
      const list = await loadCrdSources(Array.isArray(sources) ? sources : [sources]);
      const view = storageView(crdType);
      if (!view) throw new Error("the CustomResourceDefinition type is not registered");
      const installed: KubeObject[] = [];
      for (const crd of list) {
        const name = (crd.metadata as { name?: string } | undefined)?.name ?? "";
        try {
          const existing = core.store.get(crdType.storageKey, name);
          if (existing) {
            const body = {
              ...crd,
              metadata: {
                ...(crd.metadata as object),
                resourceVersion: existing.obj.metadata.resourceVersion,
              },
            };
            installed.push(core.update(view, "", name, body, {}).object);
          } else {
            installed.push(core.create(view, "", crd, {}));
          }
        } catch (e) {
          if (e instanceof ApiError) throw new Error(`installCRDs: ${name}: ${e.message}`);
          throw e;
        }
      }
      const deadline = Date.now() + 10_000;
      while (!installed.every((c) => crds.isEstablished(c.metadata.name ?? ""))) {
        if (Date.now() > deadline)
          throw new Error("installCRDs: CRDs did not become Established within 10s");
        await new Promise((r) => setImmediate(r));
      }
      return installed.map(
        (c) => core.store.get(crdType.storageKey, c.metadata.name ?? "")?.obj ?? c,
      );
    },
    requests(filter) {
      return frontend.log.filter((r) => matchesFilter(r, filter));
    },
    clearRequests() {
      frontend.log.length = 0;
    },
    access: frontend.access,
    faults: {
      add: (rule: FaultRule): FaultHandle => rules.add(rule),
      clear: () => rules.clear(),
      list: () => rules.list(),
      cutWatches: (filter) => watches.cut(filter),
      expireWatchWindow: () => {
        core.store.expireWindow();
        watches.expireAll();
      },
      restart: () => api.restart(),
    },
    async restart() {
      if (stopped) throw new Error("restart: the server was stopped");
      await closeServer();
      server = makeServer();
      await listen(server, port);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      watches.stop();
      await closeServer();
    },
    get resourceVersion() {
      return String(core.store.currentRevision);
    },
    get openWatches() {
      return watches.openWatches;
    },
    get watchEventsDelivered() {
      return watches.delivered;
    },
  };
  if (options.crds && options.crds.length > 0) await api.installCRDs(options.crds);
  return api;
}
