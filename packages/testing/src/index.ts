/**
 * Test kit for capi-ts providers: an in-memory Kubernetes API server over real HTTP with fault
 * injection and a request log (`startApiServer`), a launcher for a real kube-apiserver + etcd
 * (`startControlPlane`), an emulator of CAPI core's MachinePool controller (`startCapiCore`) and the
 * InfraMachinePool conformance suite (`MachinePoolConformance`; its vitest binding
 * `runMachinePoolConformance` is on `@capi-ts/testing/vitest`, so this entry loads without vitest).
 *
 * @example
 * ```ts
 * import { startApiServer } from "@capi-ts/testing";
 *
 * const api = await startApiServer();
 * // api.kubeConfig is a @kubernetes/client-node KubeConfig for it
 * await api.stop();
 * ```
 *
 * @packageDocumentation
 */

/** The version of this package (semver), as in its package.json. */
export const version = "0.1.0";

export * from "./apiserver/index.js";
export {
  type AppliedManifest,
  type ApplyManifestsOptions,
  applyManifests,
  type ManifestObject,
} from "./apply.js";
export * from "./capi/index.js";
export {
  createTestCertificates,
  type TestCertificateOptions,
  type TestCertificates,
} from "./certs.js";
export * from "./conformance/index.js";
export * from "./controlplane/index.js";
export {
  capiCrdFile,
  capiCrdsFolder,
  capiRelease,
  certManagerStandInCrdsFolder,
  clusterctlCrdsFolder,
} from "./crds.js";
export * from "./kubelet/index.js";
