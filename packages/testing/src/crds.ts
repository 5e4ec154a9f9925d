import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// Both src/crds.ts and the bundled dist/index.js sit one folder below the package root, next to crds/.
const packageRoot = fileURLToPath(new URL("..", import.meta.url));

/**
 * The folder of Cluster API CRDs that ship with `@capi-ts/testing`: core (`cluster.x-k8s.io`, v1beta1
 * next to v1beta2), kubeadm bootstrap and control plane, IPAM, runtime, addons and the `Dev*`
 * infrastructure kinds, taken unchanged from the CAPI release {@link capiRelease} names (with the
 * contract labels CAPI's kustomizations add). Pass it to `installCRDs` or `startApiServer({ crds })`.
 *
 * @example
 * ```ts
 * import { capiCrdsFolder, startApiServer } from "@capi-ts/testing";
 *
 * const api = await startApiServer({ crds: [capiCrdsFolder] });
 * ```
 */
export const capiCrdsFolder: string = join(packageRoot, "crds", "capi");

/**
 * Stand-ins for cert-manager's `Issuer` and `Certificate` CRDs (`cert-manager.io/v1`, with the fields
 * provider components use), so a test can apply rendered `infrastructure-components.yaml` to a bare
 * API server with strict field validation. Not cert-manager's CRDs, and nothing issues certificates.
 *
 * @example
 * ```ts
 * await controlPlane.installCRDs([certManagerStandInCrdsFolder]);
 * ```
 */
export const certManagerStandInCrdsFolder: string = join(packageRoot, "crds", "cert-manager");

/**
 * One CRD file of {@link capiCrdsFolder}, by file name.
 *
 * @param file - e.g. `cluster.x-k8s.io_machinepools.yaml`
 * @example
 * ```ts
 * await api.installCRDs([capiCrdFile("cluster.x-k8s.io_machinepools.yaml")]);
 * ```
 */
export function capiCrdFile(file: string): string {
  return join(capiCrdsFolder, file);
}

let release: string | undefined;

/**
 * The Cluster API release this package targets, e.g. `v1.14.2`: the CRDs of {@link capiCrdsFolder}
 * come from it, the emulator follows its behaviour, and `startControlPlane({ capiCore: true })` runs
 * CAPI core built from it.
 *
 * @example
 * ```ts
 * console.log(`judged by CAPI ${capiRelease()}`);
 * ```
 */
export function capiRelease(): string {
  release ??= (
    JSON.parse(readFileSync(join(packageRoot, "crds", "release.json"), "utf8")) as {
      release: string;
    }
  ).release;
  return release;
}

/**
 * clusterctl's inventory CRD (`providers.clusterctl.cluster.x-k8s.io`) of the release
 * {@link capiRelease} names, taken by `./dev crds` from that release's clusterctl: what
 * `clusterctl init` installs and `clusterctl move` reads on both management clusters.
 *
 * @example
 * ```ts
 * await controlPlane.installCRDs([clusterctlCrdsFolder]);
 * ```
 */
export const clusterctlCrdsFolder: string = join(packageRoot, "crds", "clusterctl");
