import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the kube-apiserver and etcd executables of a real control plane are. */
export interface ControlPlaneBinaries {
  /** Absolute path of the `kube-apiserver` executable. */
  kubeApiServer: string;
  /** Absolute path of the `etcd` executable. */
  etcd: string;
  /**
   * Absolute path of the `kube-controller-manager` executable in the same folder, when there is one
   * (`./dev controlplane` builds it; an envtest folder has none). Its garbage collector and namespace
   * controller run next to the API server when it is found.
   */
  kubeControllerManager?: string;
  /** Where the pair was found: an explicit folder, `KUBEBUILDER_ASSETS`, or the `./dev controlplane` build. */
  source: "option" | "KUBEBUILDER_ASSETS" | "dev controlplane";
}

const HOW_TO_GET_THEM =
  "Run `./dev controlplane` in the capi-ts repository (needs Go) to build them into tools/controlplane/bin/, " +
  "or set KUBEBUILDER_ASSETS to a folder holding `kube-apiserver` and `etcd` " +
  "(for example the output of controller-runtime's `setup-envtest use -p path`).";

/** Whether `path` is a regular file with an execute bit. */
export function isExecutableFile(path: string): boolean {
  try {
    const stat = statSync(path);
    return stat.isFile() && (stat.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

function fromFolder(
  folder: string,
  source: ControlPlaneBinaries["source"],
  what: string,
): ControlPlaneBinaries {
  const kubeApiServer = join(folder, "kube-apiserver");
  const etcd = join(folder, "etcd");
  const missing = [kubeApiServer, etcd].filter((path) => !isExecutableFile(path));
  if (missing.length > 0) {
    throw new Error(
      `${what} (${folder}) does not hold an executable ${missing.map((path) => `\`${path}\``).join(" and ")}. ${HOW_TO_GET_THEM}`,
    );
  }
  const kubeControllerManager = join(folder, "kube-controller-manager");
  return isExecutableFile(kubeControllerManager)
    ? { kubeApiServer, etcd, kubeControllerManager, source }
    : { kubeApiServer, etcd, source };
}

/** The `tools/controlplane/bin` folder of the enclosing capi-ts checkout, if this module runs from one. */
export function devBuildFolder(): string | undefined {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(folder, "tools", "controlplane", "bin");
    if (existsSync(candidate)) return candidate;
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}

/**
 * Finds the kube-apiserver and etcd executables, in this order: the `binaryDir` argument, the
 * `KUBEBUILDER_ASSETS` environment variable (controller-runtime's envtest layout), then the
 * `tools/controlplane/bin` folder that `./dev controlplane` fills.
 *
 * @param binaryDir - a folder holding both executables; when given, nothing else is looked at.
 * @returns the executables, or `undefined` when none of the places has them.
 * @throws Error when `binaryDir` or `KUBEBUILDER_ASSETS` names a folder that lacks one of them, since
 *   silently falling back would hide a broken setup.
 *
 * @example
 * ```ts
 * const binaries = findControlPlaneBinaries();
 * if (!binaries) console.warn("no real control plane: run ./dev controlplane");
 * ```
 */
export function findControlPlaneBinaries(binaryDir?: string): ControlPlaneBinaries | undefined {
  if (binaryDir !== undefined) return fromFolder(resolve(binaryDir), "option", "binaryDir");
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) return fromFolder(resolve(assets), "KUBEBUILDER_ASSETS", "KUBEBUILDER_ASSETS");
  const built = devBuildFolder();
  if (
    built &&
    isExecutableFile(join(built, "kube-apiserver")) &&
    isExecutableFile(join(built, "etcd"))
  ) {
    return fromFolder(built, "dev controlplane", "tools/controlplane/bin");
  }
  return undefined;
}

/**
 * Like {@link findControlPlaneBinaries}, but throws an error that says how to get the binaries when
 * there are none.
 *
 * @param binaryDir - a folder holding both executables.
 * @example
 * ```ts
 * const { kubeApiServer, etcd } = requireControlPlaneBinaries();
 * ```
 */
export function requireControlPlaneBinaries(binaryDir?: string): ControlPlaneBinaries {
  const found = findControlPlaneBinaries(binaryDir);
  if (!found) {
    throw new Error(
      `No kube-apiserver and etcd executables found: KUBEBUILDER_ASSETS is not set and tools/controlplane/bin/ is empty. ${HOW_TO_GET_THEM}`,
    );
  }
  return found;
}
