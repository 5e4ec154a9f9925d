// The real-backend vitest projects (`testing@real`, `integration@real`): the same test files again, on
// a real kube-apiserver + etcd (`./dev controlplane`, or KUBEBUILDER_ASSETS). CAPI_TS_BACKENDS=memory
// turns them off; when the binaries are missing they are skipped, loudly, unless CAPI_TS_BACKENDS
// names `real` explicitly (then the run fails).
//
// Building a project prints nothing and throws nothing: vitest loads every config for every run
// (`--project sdk` included). The project's global setup (real-backend.setup.ts), which vitest runs
// only when that project's tests run, says what is skipped and fails the run when it must.
import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";
import { notOnReal } from "./not-on-real.js";
import { realBackendStatus } from "./real-backend.js";

/** What a real-backend project runs. */
export interface RealProjectOptions {
  /** Project name; its list of tests left out is `notOnReal[name]` (not-on-real.ts). */
  readonly name: keyof typeof notOnReal;
  /** Test files, relative to the package. */
  readonly include: readonly string[];
  /** Test files that need the in-memory server. */
  readonly exclude?: readonly string[];
}

const setupFile = fileURLToPath(new URL("./real-backend.setup.ts", import.meta.url));
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The vitest project of `options`; without binaries its tests are skipped and its setup says why. */
export function realBackendProject(options: RealProjectOptions): ReturnType<typeof defineProject> {
  const status = realBackendStatus();
  const leftOut = notOnReal[options.name];
  const testNamePattern = status.skipReason
    ? // Matches no name: every test is reported as skipped, and the global setup says why.
      /^(?!)/
    : new RegExp(`^(?!.*(?:${leftOut.map((entry) => escapeRegExp(entry.test)).join("|")})).*$`);
  return defineProject({
    resolve: { conditions: ["capi-ts-source"] },
    ssr: { resolve: { conditions: ["capi-ts-source"] } },
    test: {
      name: options.name,
      environment: "node",
      include: status.disabled ? [] : [...options.include],
      exclude: [...(options.exclude ?? [])],
      globalSetup: [setupFile],
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
