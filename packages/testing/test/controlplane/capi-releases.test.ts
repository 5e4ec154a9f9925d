// What differs between the CAPI releases real core can be built from (`./dev controlplane --capi
// --capi-release v1.13.6`), as docs/contract.md lists it: read from what each release's build holds
// (its CRDs from its Go modules, the feature gates of its default deployment). The behaviour a
// provider meets is judged by the conformance suite on each release; this pins the list. A release
// that is not built is skipped, loudly.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import {
  capiCoreMissingReason,
  capiRelease,
  findCapiCoreBinary,
  findControlPlaneBinaries,
} from "../../src/index.js";

const OTHER = "v1.13.6";
const binaries = findControlPlaneBinaries();
const built = (release: string) => findCapiCoreBinary(binaries, undefined, release);
const both = binaries !== undefined && built(capiRelease()) && built(OTHER);
if (!both) {
  console.warn(
    `\n!!! SKIPPED BACKEND: the differences between CAPI ${capiRelease()} and ${OTHER} are NOT checked (${[
      capiRelease(),
      OTHER,
    ]
      .filter((release) => !built(release))
      .map((release) => capiCoreMissingReason(binaries, release))
      .join("; ")}).\n`,
  );
}

type Schema = { properties?: Record<string, Schema>; items?: Schema };

/** The v1beta2 schema of a CRD of a release's build, walked down `path`. */
function schemaAt(release: string, file: string, path: readonly string[]): Schema | undefined {
  const folder = dirname(built(release) as string);
  const crd = load(readFileSync(join(folder, "crds", file), "utf8")) as {
    spec: { versions: { name: string; schema: { openAPIV3Schema: Schema } }[] };
  };
  let node: Schema | undefined = crd.spec.versions.find((v) => v.name === "v1beta2")?.schema
    .openAPIV3Schema;
  for (const key of path) node = node?.properties?.[key];
  return node;
}

function releaseInfo(release: string): { featureGates: string; mainPackage: string } {
  const folder = dirname(built(release) as string);
  return JSON.parse(readFileSync(join(folder, "release.json"), "utf8"));
}

describe.skipIf(!both)(`CAPI ${capiRelease()} and ${OTHER}: what differs`, () => {
  it("both run with the same feature gates (clusterctl's defaults, MachinePool and ClusterTopology on)", () => {
    const gates = releaseInfo(capiRelease()).featureGates;
    expect(gates).toContain("MachinePool=true");
    expect(gates).toContain("ClusterTopology=true");
    expect(releaseInfo(OTHER).featureGates).toBe(gates);
  });

  it("the manager's main package moved from the module root to core/", () => {
    expect(releaseInfo(OTHER).mainPackage).toBe("sigs.k8s.io/cluster-api");
    expect(releaseInfo(capiRelease()).mainPackage).toBe("sigs.k8s.io/cluster-api/core");
  });

  it(`MachinePool status.versions is new in ${capiRelease()}; ${OTHER} has none (and prunes it)`, () => {
    const path = ["status", "versions"];
    expect(schemaAt(capiRelease(), "cluster.x-k8s.io_machinepools.yaml", path)).toBeDefined();
    expect(schemaAt(OTHER, "cluster.x-k8s.io_machinepools.yaml", path)).toBeUndefined();
  });

  it(`a deleting Machine's pre-drain and pre-terminate hook wait times are new in ${capiRelease()}`, () => {
    for (const field of ["waitForPreDrainHookStartTime", "waitForPreTerminateHookStartTime"]) {
      const path = ["status", "deletion", field];
      expect(schemaAt(capiRelease(), "cluster.x-k8s.io_machines.yaml", path), field).toBeDefined();
      expect(schemaAt(OTHER, "cluster.x-k8s.io_machines.yaml", path), field).toBeUndefined();
    }
  });

  it("both write the same MachinePool status fields besides versions", () => {
    // Their MachinePool controllers are the same code (renamed packages) but for status.versions
    // (v1.14 sets it from the Nodes or Machines): both read provisioned from
    // the InfraMachinePool's status.ready (G1), and its replicas, providerIDList and
    // infrastructureMachineKind; the conformance suite passing on each holds the behaviour.
    for (const release of [capiRelease(), OTHER]) {
      const status = schemaAt(release, "cluster.x-k8s.io_machinepools.yaml", ["status"]);
      expect(Object.keys(status?.properties ?? {}), release).toEqual(
        expect.arrayContaining([
          "initialization",
          "nodeRefs",
          "replicas",
          "readyReplicas",
          "availableReplicas",
          "upToDateReplicas",
          "phase",
          "conditions",
          "deprecated",
        ]),
      );
    }
  });
});
