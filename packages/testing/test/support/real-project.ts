// The real-backend vitest projects (`testing@real`, `integration@real`): the same test files again, on
// a real kube-apiserver + etcd (`./dev controlplane`, or KUBEBUILDER_ASSETS). CAPI_TS_BACKENDS=memory
// turns them off; when the binaries are missing they are skipped, loudly, unless CAPI_TS_BACKENDS
// names `real` explicitly (then they fail). Tests that cannot run there are named with the reason.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

/** A test that does not run on the real server, and why. */
export interface NotOnReal {
  readonly test: string;
  readonly why: string;
}

/** What a real-backend project runs. */
export interface RealProjectOptions {
  /** Project name, `<package>@real`. */
  readonly name: string;
  /** The suites it runs again, for the loud line when it is skipped. */
  readonly suites: string;
  /** Test files, relative to the package. */
  readonly include: readonly string[];
  /** Test files that need the in-memory server. */
  readonly exclude?: readonly string[];
  /**
   * Tests of those files that do not run on the real server. `divergence` entries are listed in
   * packages/testing/DIVERGENCES.md and pinned on both backends by its divergences test; when the
   * in-memory server is fixed and the test changed to the real behaviour, drop the entry.
   */
  readonly notOnReal: readonly NotOnReal[];
}

const repo = fileURLToPath(new URL("../../../../", import.meta.url));

/** The vitest project of `options`, skipped (with the reason printed) when the binaries are missing. */
export function realBackendProject(options: RealProjectOptions): ReturnType<typeof defineProject> {
  const binaryDir = process.env.KUBEBUILDER_ASSETS || join(repo, "tools/controlplane/bin");
  const haveBinaries = ["kube-apiserver", "etcd"].every((name) =>
    existsSync(join(binaryDir, name)),
  );
  const requested = process.env.CAPI_TS_BACKENDS?.split(",").map((name) => name.trim());
  const wanted = requested === undefined || requested.includes("real");

  let skipReason: string | undefined;
  if (!wanted) {
    skipReason = `CAPI_TS_BACKENDS=${process.env.CAPI_TS_BACKENDS} does not include "real"`;
  } else if (!haveBinaries) {
    const why = `no kube-apiserver and etcd in ${binaryDir}; run \`./dev controlplane\` (needs Go) or set KUBEBUILDER_ASSETS`;
    if (requested !== undefined)
      throw new Error(`CAPI_TS_BACKENDS asks for "real", but there are ${why}.`);
    skipReason = why;
  }
  const { notOnReal } = options;
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const testNamePattern = new RegExp(
    `^(?!.*(?:${notOnReal.map((entry) => escapeRegExp(entry.test)).join("|")})).*$`,
  );
  if (!skipReason && notOnReal.length > 0) {
    console.warn(
      `\n!!! ${options.name}: ${notOnReal.length} tests are skipped on the real server on purpose:\n${notOnReal.map((entry) => `    - ${entry.test}: ${entry.why}`).join("\n")}\n`,
    );
  }
  if (skipReason) {
    console.warn(
      `\n!!! SKIPPED BACKEND: ${options.suites} are NOT running on a real kube-apiserver (${skipReason}).\n`,
    );
  }
  return defineProject({
    resolve: { conditions: ["capi-ts-source"] },
    ssr: { resolve: { conditions: ["capi-ts-source"] } },
    test: {
      name: options.name,
      environment: "node",
      include: skipReason ? [] : [...options.include],
      exclude: [...(options.exclude ?? [])],
      // @ts-expect-error vitest 5 types testNamePattern as a root-only option, yet honours it per project at
      // run time: every real-backend run reports exactly the notOnReal tests as skipped.
      testNamePattern,
      env: { CAPI_TS_BACKEND: "real" },
      // Each file starts its own kube-apiserver + etcd (about 10 s on two busy cores).
      hookTimeout: 180_000,
      testTimeout: 60_000,
    },
  });
}
