/**
 * The real `clusterctl` of the target release (built beside CAPI's manager by `./dev controlplane
 * --capi`), run against a real control plane with a local file repository: the releases of a
 * provider laid out as clusterctl reads them (`{base}/{provider-label}/{version}/{components file}`
 * with `metadata.yaml`), and a clusterctl configuration naming them, all in a folder of the caller's.
 *
 * Core is not installed by clusterctl here: the control plane runs CAPI's manager as a process, with
 * its CRDs and webhooks installed by `startControlPlane`. Its repository therefore holds only its
 * Namespace as `core-components.yaml` (and its `metadata.yaml`), so that `clusterctl init --core`
 * records core in clusterctl's inventory, which every later command (upgrade included) requires,
 * without replacing what runs. cert-manager is found installed (clusterctl's own probe, an Issuer and a
 * Certificate, passes on the stand-in CRDs), and `clusterctl upgrade apply` leaves a cert-manager it
 * did not install alone; nothing is fetched from the network.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { realCapiRelease } from "./capi-core.js";

/** One release of a provider in a local clusterctl repository. */
export interface ClusterctlRelease {
  /** Semantic version with the `v`, e.g. `v0.2.0`. */
  readonly version: string;
  /** The components file (`infrastructure-components.yaml`), as `renderComponents` renders it. */
  readonly components: string;
  /** `metadata.yaml` of the release (`metadataYAML`). */
  readonly metadata: string;
}

/** Options of {@link writeClusterctlRepository}. */
export interface ClusterctlRepositoryOptions {
  /** The folder to write into (made by the caller, e.g. a temporary folder of the test). */
  readonly dir: string;
  /** The infrastructure provider's name as `clusterctl init --infrastructure <name>` takes it. */
  readonly provider: string;
  /** Its releases. */
  readonly releases: readonly ClusterctlRelease[];
  /** Core's release, recorded in the inventory. Default {@link realCapiRelease}. */
  readonly coreRelease?: string;
}

/** A local repository written by {@link writeClusterctlRepository}. */
export interface ClusterctlRepository {
  /** The clusterctl configuration file (`--config`). */
  readonly config: string;
  /** The folder everything is in; clusterctl runs with it as its home. */
  readonly dir: string;
}

const CORE_NAMESPACE = "capi-system";

/** `metadata.yaml` of core: the release's series on contract v1beta2. */
function coreMetadata(release: string): string {
  const match = /^v(\d+)\.(\d+)\./.exec(release);
  if (!match) throw new Error(`core release ${JSON.stringify(release)} is not vMAJOR.MINOR.PATCH`);
  return [
    "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3",
    "kind: Metadata",
    "releaseSeries:",
    `  - major: ${match[1]}`,
    `    minor: ${match[2]}`,
    "    contract: v1beta2",
    "",
  ].join("\n");
}

/**
 * Writes a local clusterctl repository for `provider`'s releases and core's inventory entry, and the
 * clusterctl configuration that names both (`providers:` with `file://` URLs).
 *
 * @example
 * ```ts
 * const repo = await writeClusterctlRepository({ dir, provider: "foo", releases: [v1, v2] });
 * await runClusterctl(binary, ["upgrade", "apply", "--infrastructure", "foo:v0.2.0"], { repository: repo, kubeConfig });
 * ```
 */
export async function writeClusterctlRepository(
  options: ClusterctlRepositoryOptions,
): Promise<ClusterctlRepository> {
  const { dir, provider, releases } = options;
  if (!/^[a-z][a-z0-9-]*$/.test(provider)) {
    throw new Error(
      `clusterctl provider name ${JSON.stringify(provider)} is not [a-z][a-z0-9-]*, as clusterctl names providers`,
    );
  }
  if (releases.length === 0) throw new Error("writeClusterctlRepository: no releases given");
  const coreRelease = options.coreRelease ?? realCapiRelease();
  const coreDir = join(dir, "cluster-api", coreRelease);
  await mkdir(coreDir, { recursive: true });
  await writeFile(
    join(coreDir, "core-components.yaml"),
    `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${CORE_NAMESPACE}\n`,
  );
  await writeFile(join(coreDir, "metadata.yaml"), coreMetadata(coreRelease));
  for (const release of releases) {
    if (!/^v\d+\.\d+\.\d+$/.test(release.version)) {
      throw new Error(
        `release version ${JSON.stringify(release.version)} is not vMAJOR.MINOR.PATCH, which clusterctl requires`,
      );
    }
    const releaseDir = join(dir, `infrastructure-${provider}`, release.version);
    await mkdir(releaseDir, { recursive: true });
    await writeFile(join(releaseDir, "infrastructure-components.yaml"), release.components);
    await writeFile(join(releaseDir, "metadata.yaml"), release.metadata);
  }
  const first = releases[0]?.version ?? "";
  const config = join(dir, "clusterctl.yaml");
  await writeFile(
    config,
    [
      "providers:",
      "  - name: cluster-api",
      "    type: CoreProvider",
      `    url: file://${join(coreDir, "core-components.yaml")}`,
      `  - name: ${provider}`,
      "    type: InfrastructureProvider",
      `    url: file://${join(dir, `infrastructure-${provider}`, first, "infrastructure-components.yaml")}`,
      // Overrides are looked up here, not in the home folder of whoever runs the test.
      `overridesFolder: ${join(dir, "overrides")}`,
      "",
    ].join("\n"),
  );
  return { config, dir };
}

/** Options of {@link runClusterctl}. */
export interface RunClusterctlOptions {
  /** The repository (its configuration, and its folder as clusterctl's home). */
  readonly repository: ClusterctlRepository;
  /** The management cluster. */
  readonly kubeConfig: KubeConfig;
  /** Values of the components' clusterctl variables (`${VAR}`), passed in the environment. */
  readonly variables?: Readonly<Record<string, string>>;
  /** Kills clusterctl after this long, ms. Default 240,000 (it retries API errors for minutes). */
  readonly timeoutMs?: number;
}

/**
 * Runs `clusterctl <args>` against `kubeConfig` with the repository's configuration, `-v 5`, its
 * version check off, its home in the repository folder; resolves with its output, rejects with the
 * command and the end of its output when it exits non-zero.
 *
 * @example
 * ```ts
 * await runClusterctl(binary, ["init", "--core", "cluster-api:v1.14.2", "--bootstrap", "-", "--control-plane", "-", "--infrastructure", "foo:v0.1.0"], { repository, kubeConfig });
 * ```
 */
export async function runClusterctl(
  binary: string,
  args: readonly string[],
  options: RunClusterctlOptions,
): Promise<string> {
  const kubeconfigPath = join(options.repository.dir, "kubeconfig");
  await writeFile(kubeconfigPath, options.kubeConfig.exportConfig(), { mode: 0o600 });
  const full = [
    ...args,
    "--kubeconfig",
    kubeconfigPath,
    "--config",
    options.repository.config,
    "-v",
    "5",
  ];
  const home = options.repository.dir;
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      full,
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          CLUSTERCTL_DISABLE_VERSIONCHECK: "true",
          ...options.variables,
        },
        timeout: options.timeoutMs ?? 240_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (error) {
          const tail = output.split("\n").slice(-40).join("\n");
          reject(
            new Error(
              `clusterctl ${args.join(" ")} failed (${error.killed ? "killed after its timeout" : `exit ${String(error.code)}`}):\n${tail}`,
            ),
          );
          return;
        }
        resolve(output);
      },
    );
  });
}
