// The test bed of the workload-cluster scenarios: the relay that gives the workload cluster a second
// address (forwarding, cut, closed, or closing every connection unanswered), and the credentials the
// real judge issues and revokes (bootstrap tokens on a kube-apiserver started with
// --enable-bootstrap-token-auth). Every check goes over HTTP to a real server.
import { KubeClient, NodeResource, UnauthorizedError } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/index.js";
import {
  openWorkloadAccess,
  realWorkloadAccess,
  WorkloadRelay,
} from "../../src/conformance/workload.js";
import {
  type ControlPlane,
  findControlPlaneBinaries,
  startControlPlane,
} from "../../src/controlplane/index.js";

const nodes = (client: KubeClient) => client.list(NodeResource, { limit: 1 });

describe("WorkloadRelay (in-memory workload cluster)", () => {
  let api: ApiServer;
  beforeAll(async () => {
    api = await startApiServer();
  });
  afterAll(async () => {
    await api.stop();
  });

  it("forwards, counts connections, and refuses once closed", async () => {
    const relay = await WorkloadRelay.start(api.url, "forward");
    const access = await openWorkloadAccess(api.kubeConfig).issue();
    const client = new KubeClient(access.kubeConfig(relay.url), { requestTimeoutMs: 2_000 });
    await expect(nodes(client)).resolves.toMatchObject({ items: [] });
    expect(relay.connections).toBeGreaterThan(0);
    await relay.close();
    await expect(nodes(client)).rejects.toThrow();
  });

  it("in hangup mode closes every connection unanswered", async () => {
    const relay = await WorkloadRelay.start(api.url, "hangup");
    try {
      const access = await openWorkloadAccess(api.kubeConfig).issue();
      const client = new KubeClient(access.kubeConfig(relay.url), {
        requestTimeoutMs: 2_000,
        maxThrottleRetries: 0,
      });
      await expect(nodes(client)).rejects.toThrow();
      expect(relay.connections).toBeGreaterThan(0);
    } finally {
      await relay.close();
    }
  });
});

const binaries = findControlPlaneBinaries();
if (!binaries) {
  console.warn(
    "\n!!! SKIPPED BACKEND: the real judge's workload credentials are NOT checked (no kube-apiserver/etcd; run `./dev controlplane`).\n",
  );
}

describe.skipIf(!binaries)("realWorkloadAccess (bootstrap tokens on kube-apiserver)", () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane({ apiServerArgs: ["--enable-bootstrap-token-auth=true"] });
  }, 120_000);
  afterAll(async () => {
    await cp?.stop();
  });

  it("issues credentials that work directly and through a relay, and 401 once revoked", async () => {
    const issuer = realWorkloadAccess(new KubeClient(cp.kubeConfig), cp.kubeConfig);
    expect(issuer.revocable).toBe(true);
    const first = await issuer.issue();
    const second = await issuer.issue();
    const relay = await WorkloadRelay.start(cp.url, "forward");
    try {
      const viaRelay = new KubeClient(first.kubeConfig(relay.url), { requestTimeoutMs: 5_000 });
      await expect(nodes(viaRelay)).resolves.toBeDefined();
      await first.revoke();
      relay.cut();
      await expect(nodes(viaRelay)).rejects.toBeInstanceOf(UnauthorizedError);
      // Revoking one leaves the others working.
      await expect(nodes(new KubeClient(second.kubeConfig()))).resolves.toBeDefined();
    } finally {
      await relay.close();
    }
  }, 60_000);
});
