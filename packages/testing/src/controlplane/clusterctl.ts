/**
 * The real `clusterctl` of the target release (built by `./dev controlplane --capi` next to CAPI's
 * manager, `capi/<release>/clusterctl`), for tests that let it judge a provider: finding it, making a
 * real control plane look to it as `clusterctl init` leaves a management cluster (its inventory CRD,
 * one `Provider` object per provider, the `clusterctl.cluster.x-k8s.io` label on the CRDs it moves),
 * and running it with bounded output, no network and no configuration of the machine it runs on.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlreadyExists, KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { clusterctlCrdsFolder } from "../crds.js";
import { type ControlPlaneBinaries, isExecutableFile } from "./binaries.js";
import { findCapiCoreBinary, realCapiRelease } from "./capi-core.js";

/** The label clusterctl lists CRDs by (`clusterctl move` moves objects of those kinds only). */
export const CLUSTERCTL_LABEL = "clusterctl.cluster.x-k8s.io";
/** The label naming the provider a component belongs to (`<type prefix>-<name>`, e.g. `cluster-api`). */
export const PROVIDER_LABEL = "cluster.x-k8s.io/provider";

/** clusterctl's inventory kind (`providers.clusterctl.cluster.x-k8s.io`). */
export const ClusterctlProviders: ResourceDescriptor<KubernetesObject> = {
  group: "clusterctl.cluster.x-k8s.io",
  version: "v1alpha3",
  kind: "Provider",
  plural: "providers",
  scope: "Namespaced",
};

const CRDS: ResourceDescriptor<KubernetesObject> = {
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  scope: "Cluster",
};

/** Output kept of one clusterctl run (each stream), so a chatty run cannot fill the test's memory. */
const OUTPUT_LIMIT = 256 * 1024;

/**
 * Finds the `clusterctl` built beside CAPI's manager of `release`; `undefined` when it is not built.
 *
 * @param binaries - the control plane's executables, whose folder is searched first.
 * @param release - the CAPI release; default the one real core runs.
 * @example
 * ```ts
 * const clusterctl = findClusterctlBinary(findControlPlaneBinaries());
 * if (!clusterctl) console.warn("!!! SKIPPED: clusterctl is not built (run `./dev controlplane --capi`)");
 * ```
 */
export function findClusterctlBinary(
  binaries: Pick<ControlPlaneBinaries, "kubeApiServer"> | undefined,
  release: string = realCapiRelease(),
): string | undefined {
  const manager = findCapiCoreBinary(binaries, undefined, release);
  if (!manager) return undefined;
  const clusterctl = join(manager, "..", "clusterctl");
  return isExecutableFile(clusterctl) ? clusterctl : undefined;
}

/** A provider as `clusterctl init` records it in the inventory. */
export interface ClusterctlProvider {
  /** Its name without the type prefix, e.g. `cluster-api`, `kubeadm`, `fake`. */
  readonly name: string;
  /** `CoreProvider`, `BootstrapProvider`, `ControlPlaneProvider` or `InfrastructureProvider`. */
  readonly type:
    | "CoreProvider"
    | "BootstrapProvider"
    | "ControlPlaneProvider"
    | "InfrastructureProvider";
  /** Its release, e.g. `v1.14.2` (clusterctl move refuses a target with an older one). */
  readonly version: string;
  /** The namespace it is installed in (where its Provider object lives). */
  readonly namespace: string;
  /** Names of the CRDs it installed: labelled for clusterctl and with the provider's label. */
  readonly crds: readonly string[];
}

const TYPE_PREFIX: Record<ClusterctlProvider["type"], string> = {
  CoreProvider: "",
  BootstrapProvider: "bootstrap-",
  ControlPlaneProvider: "control-plane-",
  InfrastructureProvider: "infrastructure-",
};

/**
 * Makes a management cluster look to clusterctl as `clusterctl init` leaves one: installs the
 * inventory CRD of the release (from `@capi-ts/testing`'s `crds/clusterctl`, taken by `./dev crds`),
 * labels each provider's CRDs (`clusterctl.cluster.x-k8s.io`, `cluster.x-k8s.io/provider`) and writes
 * one `Provider` object per provider. The CRDs must be installed already; a missing one fails with
 * its name.
 *
 * @param kubeConfig - the management cluster
 * @param install - installs CRD files (a real control plane's `installCRDs`)
 * @param providers - what `clusterctl init` would have installed
 * @example
 * ```ts
 * await prepareForClusterctl(cp.kubeConfig, (crds) => cp.installCRDs(crds), [
 *   { name: "cluster-api", type: "CoreProvider", version: "v1.14.2", namespace: "capi-system", crds: ["clusters.cluster.x-k8s.io"] },
 * ]);
 * ```
 */
export async function prepareForClusterctl(
  kubeConfig: KubeConfig,
  install: (crds: readonly string[]) => Promise<void>,
  providers: readonly ClusterctlProvider[],
): Promise<void> {
  await install([clusterctlCrdsFolder]);
  const client = new KubeClient(kubeConfig, { fieldManager: "capi-ts-clusterctl-init" });
  for (const provider of providers) {
    const label = `${TYPE_PREFIX[provider.type]}${provider.name}`;
    for (const crd of provider.crds) {
      await client
        .mergePatch(
          CRDS,
          { name: crd },
          {
            metadata: { labels: { [CLUSTERCTL_LABEL]: "", [PROVIDER_LABEL]: label } },
          },
        )
        .catch((error: unknown) => {
          throw new Error(
            `prepareForClusterctl: cannot label CRD ${crd} of provider ${label} (install it first): ${(error as Error).message}`,
          );
        });
    }
    try {
      await client.create(ClusterctlProviders, {
        apiVersion: "clusterctl.cluster.x-k8s.io/v1alpha3",
        kind: "Provider",
        metadata: {
          name: label,
          namespace: provider.namespace,
          labels: { [CLUSTERCTL_LABEL]: "", [PROVIDER_LABEL]: label },
        },
        providerName: provider.name,
        type: provider.type,
        version: provider.version,
      } as KubernetesObject);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  }
}

/** The outcome of one clusterctl run. */
export interface ClusterctlResult {
  /** The exit code (`null` when a signal ended it). */
  readonly code: number | null;
  /** Standard output (the first 256 KiB). */
  readonly stdout: string;
  /** Standard error (the first 256 KiB): clusterctl logs here. */
  readonly stderr: string;
}

/** A clusterctl run in progress. */
export interface ClusterctlRun {
  /** Resolves when it exits (never rejects for a non-zero exit: read `code`). */
  readonly done: Promise<ClusterctlResult>;
  /** What it printed so far, both streams, for a test that waits on a log line. */
  output(): string;
  /** Ends it (SIGTERM). */
  kill(): void;
}

/** The two clusters of a move, each a real control plane's kubeconfig. */
export interface ClusterctlMoveOptions {
  /** The clusterctl binary ({@link findClusterctlBinary}). */
  readonly clusterctl: string;
  /** The source management cluster. */
  readonly from: KubeConfig;
  /** The target management cluster. */
  readonly to: KubeConfig;
  /** Only the objects of this namespace. */
  readonly namespace: string;
  /** clusterctl's log level (`-v`). Default 1. */
  readonly verbosity?: number;
}

/**
 * Runs `clusterctl move --kubeconfig <from> --to-kubeconfig <to> --namespace <ns>` with the two
 * kubeconfigs in a private folder (removed when it exits), `HOME` and the XDG folders there too (no
 * user configuration is read) and the version check off (no network).
 *
 * @example
 * ```ts
 * const run = clusterctlMove({ clusterctl, from: a.kubeConfig, to: b.kubeConfig, namespace: "default" });
 * const { code, stderr } = await run.done;
 * ```
 */
export function clusterctlMove(options: ClusterctlMoveOptions): ClusterctlRun {
  let out = "";
  let err = "";
  let child: ReturnType<typeof spawn> | undefined;
  let killed = false;
  const done = (async (): Promise<ClusterctlResult> => {
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-clusterctl-"));
    try {
      const from = join(dir, "from.kubeconfig");
      const to = join(dir, "to.kubeconfig");
      await writeFile(from, options.from.exportConfig(), { mode: 0o600 });
      await writeFile(to, options.to.exportConfig(), { mode: 0o600 });
      const args = [
        "move",
        "--kubeconfig",
        from,
        "--to-kubeconfig",
        to,
        "--namespace",
        options.namespace,
        `-v=${options.verbosity ?? 1}`,
      ];
      return await new Promise<ClusterctlResult>((resolve, reject) => {
        const proc = spawn(options.clusterctl, args, {
          env: {
            PATH: process.env.PATH ?? "",
            HOME: dir,
            XDG_CONFIG_HOME: dir,
            XDG_DATA_HOME: dir,
            CLUSTERCTL_DISABLE_VERSIONCHECK: "true",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        child = proc;
        if (killed) proc.kill("SIGTERM");
        proc.stdout?.on("data", (chunk: Buffer) => {
          if (out.length < OUTPUT_LIMIT) out += chunk.toString("utf8");
        });
        proc.stderr?.on("data", (chunk: Buffer) => {
          if (err.length < OUTPUT_LIMIT) err += chunk.toString("utf8");
        });
        proc.on("error", reject);
        proc.on("close", (code) => resolve({ code, stdout: out, stderr: err }));
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  return {
    done,
    output: () => out + err,
    kill: () => {
      killed = true;
      child?.kill("SIGTERM");
    },
  };
}
