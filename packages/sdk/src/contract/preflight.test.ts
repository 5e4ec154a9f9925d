// core's MachineSet preflight checks, for a MachinePool: the rules on the control plane's and the
// pool's versions, each named, and the skip annotation.
import { describe, expect, it } from "vitest";
import {
  evaluatePreflight,
  type PreflightInput,
  parseKubernetesVersion,
  skippedPreflightChecks,
} from "./preflight.js";

function input(
  spec: string | undefined,
  status: unknown,
  overrides: Partial<PreflightInput> = {},
): PreflightInput {
  return {
    controlPlane: {
      kind: "KubeadmControlPlane",
      metadata: { namespace: "ns", name: "cp" },
      spec: spec === undefined ? {} : { version: spec },
      status,
    },
    cluster: undefined,
    poolVersion: "v1.34.1",
    bootstrapConfigRef: { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig" },
    skipped: new Set(),
    ...overrides,
  };
}

const checks = (i: PreflightInput) => evaluatePreflight(i).map((f) => f.check);

describe("evaluatePreflight", () => {
  it("checks nothing when the control plane has no spec.version, as core", () => {
    expect(evaluatePreflight(input(undefined, {}))).toEqual([]);
  });

  it("holds while the control plane provisions (no status.version) or upgrades (spec newer than status)", () => {
    expect(evaluatePreflight(input("v1.34.1", {}))).toEqual([
      {
        check: "ControlPlaneIsStable",
        message:
          'KubeadmControlPlane ns/cp is provisioning ("ControlPlaneIsStable" preflight check failed)',
      },
    ]);
    expect(evaluatePreflight(input("v1.34.1", { version: "v1.33.5" }))[0]?.message).toBe(
      'KubeadmControlPlane ns/cp is upgrading ("ControlPlaneIsStable" preflight check failed)',
    );
    // A rebuild (other build metadata) is an upgrade too; the same version is not.
    expect(checks(input("v1.34.1+b2", { version: "v1.34.1+b1" }))).toEqual([
      "ControlPlaneIsStable",
    ]);
    expect(checks(input("v1.34.1", { version: "v1.34.1" }))).toEqual([]);
    // status.versions, oldest first, wins over status.version.
    expect(
      checks(
        input("v1.34.1", {
          version: "v1.34.1",
          versions: [{ version: "v1.33.5" }, { version: "v1.34.1" }],
        }),
      ),
    ).toEqual(["ControlPlaneIsStable"]);
  });

  it("holds a pending topology upgrade, unless the control plane is at the current upgrade step", () => {
    const cluster = { spec: { topology: { version: "v1.35.0" } } };
    expect(
      evaluatePreflight(input("v1.34.1", { version: "v1.34.1" }, { cluster }))[0]?.message,
    ).toBe(
      'KubeadmControlPlane ns/cp has a pending version upgrade to v1.35.0 ("ControlPlaneIsStable" preflight check failed)',
    );
    const stepping = {
      metadata: { annotations: { "topology.internal.cluster.x-k8s.io/upgrade-step": "v1.34.1" } },
      spec: { topology: { version: "v1.35.0" } },
    };
    expect(checks(input("v1.34.1", { version: "v1.34.1" }, { cluster: stepping }))).toEqual([]);
    // With a topology the pool must run the control plane's version exactly.
    expect(
      checks(
        input("v1.34.1", { version: "v1.34.1" }, { cluster: stepping, poolVersion: "v1.34.0" }),
      ),
    ).toEqual(["ControlPlaneVersionSkew"]);
  });

  it("keeps the kubelet skew: never newer than the control plane, at most 3 minors older", () => {
    const stable = { version: "v1.34.1" };
    const noKubeadm = { bootstrapConfigRef: undefined };
    expect(checks(input("v1.34.1", stable, { ...noKubeadm, poolVersion: "v1.35.0" }))).toEqual([
      "KubernetesVersionSkew",
    ]);
    expect(checks(input("v1.34.1", stable, { ...noKubeadm, poolVersion: "v1.31.9" }))).toEqual([]);
    expect(checks(input("v1.34.1", stable, { ...noKubeadm, poolVersion: "v1.30.0" }))).toEqual([
      "KubernetesVersionSkew",
    ]);
  });

  it("with kubeadm's bootstrap provider, wants the control plane's minor version", () => {
    expect(checks(input("v1.34.1", { version: "v1.34.1" }, { poolVersion: "v1.33.2" }))).toEqual([
      "KubeadmVersionSkew",
    ]);
    expect(
      checks(
        input(
          "v1.34.1",
          { version: "v1.34.1" },
          {
            poolVersion: "v1.33.2",
            bootstrapConfigRef: { apiGroup: "bootstrap.example.com", kind: "Talos" },
          },
        ),
      ),
    ).toEqual([]);
  });

  it("skips what the annotation names, or everything with All", () => {
    const upgrading = { version: "v1.33.5" };
    expect(
      checks(
        input("v1.34.1", upgrading, {
          skipped: skippedPreflightChecks(" ControlPlaneIsStable ,x"),
        }),
      ),
    ).toEqual([]);
    expect(
      checks(
        input("v1.34.1", {}, { poolVersion: "v1.36.0", skipped: skippedPreflightChecks("All") }),
      ),
    ).toEqual([]);
  });

  it("names a version it cannot parse instead of guessing, with the text bounded", () => {
    const [failure] = evaluatePreflight(input(`v1.${"9".repeat(500)}`, {}));
    expect(failure?.check).toBe("ControlPlaneIsStable");
    expect(failure?.message.length).toBeLessThan(200);
    expect(checks(input("v1.34.1", { version: "v1.34.1" }, { poolVersion: "latest" }))).toEqual([
      "KubernetesVersionSkew",
    ]);
  });
});

describe("parseKubernetesVersion", () => {
  it("reads versions as core's ParseTolerant does", () => {
    expect(parseKubernetesVersion("v1.34.1")).toMatchObject({ major: 1, minor: 34, patch: 1 });
    expect(parseKubernetesVersion("1.34")).toMatchObject({ major: 1, minor: 34, patch: 0 });
    expect(parseKubernetesVersion("v1.34.1-rc.0+abc")).toMatchObject({ pre: "rc.0", build: "abc" });
    expect(parseKubernetesVersion("one.two")).toBeUndefined();
  });
});
