// The `testing@real` project: the API server behaviour suite (test/apiserver), the CRD manifest
// suite (test/crd), the SDK's writes (the patch helper, test/patch, and the contract helpers,
// test/contract) and the provider kit (test/provider: the MachinePool controller with the CAPI core
// emulator and the fake cloud) again, on a real kube-apiserver + etcd (`./dev controlplane`, or
// KUBEBUILDER_ASSETS). CAPI_TS_BACKENDS=memory turns it off; when the binaries are missing its tests
// are skipped, loudly, unless CAPI_TS_BACKENDS names `real` explicitly (then the run fails).
//
// Loading this file prints nothing and throws nothing (vitest loads it for every run, `--project sdk`
// included): the global setup says what is skipped and fails the run, and only when this project's
// tests run.
import { defineProject } from "vitest/config";
import { notOnReal } from "./test/support/not-on-real.js";
import { realBackendStatus } from "./test/support/real-backend.js";

const status = realBackendStatus();
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const testNamePattern = new RegExp(
  `^(?!.*(?:${notOnReal.map((entry) => escapeRegExp(entry.test)).join("|")})).*$`,
);

export default defineProject({
  resolve: { conditions: ["capi-ts-source"] },
  ssr: { resolve: { conditions: ["capi-ts-source"] } },
  test: {
    name: "testing@real",
    environment: "node",
    include: status.disabled
      ? []
      : [
          "test/apiserver/**/*.test.ts",
          "test/crd/**/*.test.ts",
          "test/patch/**/*.test.ts",
          "test/contract/**/*.test.ts",
          "test/provider/**/*.test.ts",
        ],
    globalSetup: ["test/support/real-backend.setup.ts"],
    // Fault injection and the request log exist only in the in-memory server.
    exclude: ["test/apiserver/faults.test.ts"],
    // @ts-expect-error vitest 5 types testNamePattern as a root-only option, yet honours it per project at
    // run time: every real-backend run reports exactly the notOnReal tests as skipped.
    // Without binaries every test is skipped (the pattern matches no name); the global setup says why.
    testNamePattern: status.skipReason ? /^(?!)/ : testNamePattern,
    env: { CAPI_TS_BACKEND: "real" },
    // Each file starts its own kube-apiserver + etcd (about 10 s on two busy cores).
    hookTimeout: 180_000,
    testTimeout: 60_000,
  },
});
