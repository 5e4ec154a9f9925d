/*
 * Tests that do not run on the real server, per real-backend project, each with why. `divergence`
 * entries are listed in DIVERGENCES.md and pinned on both backends by
 * test/divergences/divergences.test.ts; when the in-memory server is fixed and the test changed to the
 * real behaviour, drop the entry here.
 */

import { realHasControllers } from "./real-backend.js";

/** A test that does not run on the real server, and why. */
export interface NotOnReal {
  readonly test: string;
  readonly why: string;
}

/** The tests each real-backend project leaves out, by project name. */
export const notOnReal: Readonly<
  Record<"testing@real" | "integration@real", readonly NotOnReal[]>
> = {
  "testing@real": [
    // Without kube-controller-manager (an envtest folder), nothing collects garbage or finalizes
    // namespaces on the real server; `./dev controlplane` builds it.
    ...(realHasControllers()
      ? []
      : [
          "Background: deletes dependents after the owner",
          "Orphan: removes the owner reference from dependents",
          "Foreground: the owner waits (foregroundDeletion)",
          "terminate: phase Terminating, no new content (403)",
        ].map((test) => ({ test, why: "no kube-controller-manager next to kube-apiserver" }))),
    {
      test: "applies operations (client-node's default for typed patch calls)",
      why: "in-memory only: reads the request log",
    },
    {
      test: "answers a too-old resourceVersion with an ERROR event carrying a 410 Status",
      why: "in-memory only: expireWatchWindow()",
    },
    {
      test: "sends periodic BOOKMARK events when allowed",
      why: "in-memory only: bookmarkIntervalMs (the real server sends one a minute)",
    },
    {
      test: "survives a forced 410, a cut stream and a restart",
      why: "in-memory only: faults and restart",
    },
    // test/patch: each has a twin that runs on both backends, where a concurrent writer makes the
    // server itself answer 409.
    {
      test: "re-reads and re-applies on injected 409s, up to 5 attempts",
      why: "in-memory only: faults",
    },
    {
      test: "its errors (numeric code) still drive the retries on injected 409s",
      why: "in-memory only: faults",
    },
  ],
  "integration@real": [
    // The behaviour under server faults needs fault injection; every other provider test runs on
    // both backends (request-log checks only where the log exists).
    {
      test: "survives API server faults on its writes (retries with backoff) and converges",
      why: "in-memory only: faults",
    },
  ],
};
