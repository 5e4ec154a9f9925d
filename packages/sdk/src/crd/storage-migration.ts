/**
 * Storage version migration of a provider's own CRDs, as CAPI's providers run it in their managers
 * (CAPI's `crdmigrator` controller, since v1.10): after an upgrade whose CRD moves the storage version,
 * every object is rewritten at the new storage version and the CRD's `status.storedVersions` is cut
 * down to it, so that a later release can stop serving the old version. `clusterctl upgrade apply`
 * does not do it for a provider (in v1.14.2 it migrates only cert-manager's CRs): the provider's
 * manager must.
 *
 * @module
 */
import type { KubeClient } from "../runtime/client.js";
import { ConflictError, NotFoundError } from "../runtime/errors.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type { Runnable } from "../runtime/runnable.js";
import type { Manifest } from "./manifest.js";

/**
 * The annotation on a CRD that records the generation whose objects were migrated (CAPI's
 * `crd.cluster.x-k8s.io/observed-generation`): a CRD seen again at that generation is left alone.
 */
export const CRD_MIGRATION_OBSERVED_GENERATION = "crd.cluster.x-k8s.io/observed-generation";

/** What {@link storageVersionMigrator} needs of a kind: the CRDs it ships (`defineInfraMachinePool` fits). */
export interface MigratedKind {
  /** The kind's CRD. */
  readonly crd: Manifest;
  /** Its template CRD, if any. */
  readonly templateCrd?: Manifest | undefined;
  /** Its InfraMachine kind, if any (MachinePool Machines). */
  readonly machine?: { readonly crd: Manifest } | undefined;
}

/** Options of {@link storageVersionMigrator}. */
export interface StorageVersionMigratorOptions {
  /** A client of the management cluster (the manager's `client`). */
  readonly client: KubeClient;
  /** The kinds whose CRDs are migrated. */
  readonly kinds: readonly MigratedKind[];
  /** Where progress and failures are logged (the manager's `logger`). */
  readonly logger?: RuntimeLogger;
  /** Delay before a failed migration or a cut watch is tried again, ms. Default 2,000. */
  readonly retryMs?: number;
  /** Objects per list page. Default 500, as CAPI's. */
  readonly pageSize?: number;
}

interface CrdVersion {
  name: string;
  storage?: boolean;
  subresources?: { status?: unknown };
}

interface LiveCrd {
  metadata: {
    name: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec: { group: string; names: { plural: string }; scope: string; versions: CrdVersion[] };
  status?: { storedVersions?: string[] };
}

interface ObjectPage {
  items?: Array<{
    metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  }>;
  metadata?: { continue?: string };
}

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/** The names of the CRDs of `kinds`, deduplicated. */
function crdNames(kinds: readonly MigratedKind[]): string[] {
  const names = new Set<string>();
  for (const kind of kinds) {
    for (const crd of [kind.crd, kind.templateCrd, kind.machine?.crd]) {
      const name = (crd?.metadata as { name?: unknown } | undefined)?.name;
      if (typeof name === "string") names.add(name);
    }
  }
  return [...names];
}

/**
 * Migrates one CRD if it needs it: rewrites every object at the storage version (an empty merge
 * patch carrying the object's resourceVersion, which the API server stores re-encoded at the current
 * storage version; through `/status` when the version has one, since admission webhooks usually do
 * not watch it), then sets `status.storedVersions` to the storage version alone, then records the
 * generation. Returns how many objects were rewritten, or `undefined` when nothing was to do.
 *
 * @example
 * ```ts
 * await migrateStorageVersion(client, "foomachinepools.infrastructure.foo.com");
 * ```
 */
export async function migrateStorageVersion(
  client: KubeClient,
  crdName: string,
  options: { readonly pageSize?: number } = {},
): Promise<number | undefined> {
  const path = `${CRD_PATH}/${encodeURIComponent(crdName)}`;
  const crd = (await client.request({ method: "GET", path })) as LiveCrd;
  const generation = String(crd.metadata.generation ?? 0);
  if (crd.metadata.annotations?.[CRD_MIGRATION_OBSERVED_GENERATION] === generation) {
    return undefined;
  }
  const storage = crd.spec.versions.find((version) => version.storage);
  if (!storage) {
    throw new Error(`CRD ${crdName} has no storage version; it cannot be migrated`);
  }
  const stored = crd.status?.storedVersions ?? [];
  let migrated: number | undefined;
  if (stored.length !== 1 || stored[0] !== storage.name) {
    migrated = 0;
    const { group, names, scope } = crd.spec;
    const viaStatus = storage.subresources?.status !== undefined;
    let next: string | undefined;
    do {
      const page = (await client.request({
        method: "GET",
        path: `/apis/${group}/${storage.name}/${names.plural}`,
        query: { limit: options.pageSize ?? 500, ...(next ? { continue: next } : {}) },
      })) as ObjectPage;
      for (const item of page.items ?? []) {
        const name = item.metadata?.name;
        if (!name) continue;
        const namespace = item.metadata?.namespace;
        const objectPath = `/apis/${group}/${storage.name}/${
          scope === "Namespaced" && namespace ? `namespaces/${encodeURIComponent(namespace)}/` : ""
        }${names.plural}/${encodeURIComponent(name)}${viaStatus ? "/status" : ""}`;
        try {
          await client.request({
            method: "PATCH",
            path: objectPath,
            contentType: "application/merge-patch+json",
            body: { metadata: { resourceVersion: item.metadata?.resourceVersion } },
          });
          migrated += 1;
        } catch (error) {
          // Gone, or written since it was listed: either way it is no longer stored at the old version.
          if (!(error instanceof NotFoundError) && !(error instanceof ConflictError)) throw error;
        }
      }
      next = page.metadata?.continue || undefined;
    } while (next);
    await client.request({
      method: "PATCH",
      path: `${path}/status`,
      contentType: "application/merge-patch+json",
      body: {
        metadata: { resourceVersion: crd.metadata.resourceVersion },
        status: { storedVersions: [storage.name] },
      },
    });
  }
  await client.request({
    method: "PATCH",
    path,
    contentType: "application/merge-patch+json",
    body: { metadata: { annotations: { [CRD_MIGRATION_OBSERVED_GENERATION]: generation } } },
  });
  return migrated;
}

/**
 * A {@link Runnable} for the manager (leader only) that keeps the kinds' CRDs migrated to their
 * storage version: at start and whenever a CRD changes (a new release applied by `clusterctl upgrade
 * apply`), {@link migrateStorageVersion}. Add it to the manager of a provider whose kind has more than
 * one version. Its RBAC (`get`, `list`, `watch`, `patch` on the CRDs, `patch` on their status, `patch`
 * on the kinds and their status) is in `kitPermissions` for a kind with spokes.
 *
 * @example
 * ```ts
 * manager.add(storageVersionMigrator({ client: manager.client, kinds: [FooMachinePool], logger: manager.logger }));
 * ```
 */
export function storageVersionMigrator(options: StorageVersionMigratorOptions): Runnable {
  const names = crdNames(options.kinds);
  const retryMs = options.retryMs ?? 2000;
  let abort: AbortController | undefined;
  let loops: Promise<void>[] = [];
  const wait = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  const migrate = async (name: string) => {
    const migrated = await migrateStorageVersion(options.client, name, {
      ...(options.pageSize ? { pageSize: options.pageSize } : {}),
    });
    if (migrated !== undefined) {
      options.logger?.info({ crd: name, objects: migrated }, "storage version migration done");
    }
  };
  // One loop per CRD, the only writer of its migration: migrate, then watch it and migrate on change.
  const loop = async (name: string, signal: AbortSignal) => {
    while (!signal.aborted) {
      try {
        await migrate(name);
        const current = (await options.client.request({
          method: "GET",
          path: `${CRD_PATH}/${encodeURIComponent(name)}`,
        })) as LiveCrd;
        const events = options.client.watch<LiveCrd & { apiVersion?: string; kind?: string }>(
          {
            group: "apiextensions.k8s.io",
            version: "v1",
            kind: "CustomResourceDefinition",
            plural: "customresourcedefinitions",
            scope: "Cluster",
          },
          {
            fieldSelector: `metadata.name=${name}`,
            ...(current.metadata.resourceVersion
              ? { resourceVersion: current.metadata.resourceVersion }
              : {}),
            signal,
          },
        );
        for await (const event of events) {
          if (event.type === "ADDED" || event.type === "MODIFIED") await migrate(name);
        }
      } catch (error) {
        if (signal.aborted) return;
        if (!(error instanceof NotFoundError)) {
          options.logger?.error(
            { crd: name, error: error instanceof Error ? error.message : String(error) },
            "storage version migration failed; retrying",
          );
        }
        await wait(retryMs, signal);
      }
    }
  };
  return {
    name: "storage-version-migrator",
    needLeaderElection: true,
    async start() {
      abort = new AbortController();
      const signal = abort.signal;
      loops = names.map((name) => loop(name, signal));
    },
    async stop() {
      abort?.abort();
      await Promise.allSettled(loops);
      loops = [];
    },
  };
}
