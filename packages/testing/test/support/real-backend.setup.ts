// Global setup of the real-backend projects: vitest runs it only when tests of that project run, so
// `./dev test packages/sdk/...` stays quiet. It names what the real server skips on purpose, says
// loudly when the whole backend is skipped, and fails the run when the backend was asked for and the
// binaries are missing.
import type { TestProject } from "vitest/node";
import { notOnReal } from "./not-on-real.js";
import { realBackendStatus } from "./real-backend.js";

/** Prints what the real-backend run leaves out, or throws when CAPI_TS_BACKENDS insists on it. */
export default function setup(project: TestProject): void {
  const name = project.name;
  const status = realBackendStatus();
  if (status.missingButRequired) throw new Error(status.missingButRequired);
  if (status.skipReason) {
    console.warn(
      `\n!!! SKIPPED BACKEND: ${name} is NOT running on a real kube-apiserver (${status.skipReason}).\n`,
    );
    return;
  }
  const leftOut = name in notOnReal ? notOnReal[name as keyof typeof notOnReal] : [];
  if (leftOut.length === 0) return;
  console.warn(
    `\n!!! ${name}: ${leftOut.length} tests are skipped on the real server on purpose:\n${leftOut.map((entry) => `    - ${entry.test}: ${entry.why}`).join("\n")}\n`,
  );
}
