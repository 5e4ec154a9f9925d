/**
 * The manager's health and readiness checks, and the handler that serves them at `/healthz`,
 * `/livez` and `/readyz`.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** A named health or readiness check: resolve to pass, throw (or resolve a string) to fail. */
// biome-ignore lint/suspicious/noConfusingVoidType: lets checks that return nothing type-check.
export type HealthCheck = () => Promise<undefined | string | void> | undefined | string | void;

/**
 * Runs every check in order and reports as Kubernetes' probes do: a line per check (`[+]name ok` or
 * `[-]name failed: why`), then `check passed` or `check failed`. A check that throws fails with its
 * message; one that resolves a string fails with it.
 */
export async function runHealthChecks(
  checks: ReadonlyMap<string, HealthCheck>,
): Promise<{ ok: boolean; report: string }> {
  let ok = true;
  const lines: string[] = [];
  for (const [name, check] of checks) {
    try {
      const failure = await check();
      if (typeof failure === "string") {
        ok = false;
        lines.push(`[-]${name} failed: ${failure}`);
      } else lines.push(`[+]${name} ok`);
    } catch (error) {
      ok = false;
      lines.push(`[-]${name} failed: ${(error as Error)?.message ?? String(error)}`);
    }
  }
  lines.push(ok ? "check passed" : "check failed");
  return { ok, report: `${lines.join("\n")}\n` };
}

/**
 * Serves `/healthz` and `/livez` from `health`, `/readyz` from `ready` (200 when every check
 * passes, 500 otherwise, with the report as text), and 404 for any other path.
 */
export function healthProbeHandler(
  health: ReadonlyMap<string, HealthCheck>,
  ready: ReadonlyMap<string, HealthCheck>,
): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  return async (request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    const checks =
      path === "/healthz" || path === "/livez" ? health : path === "/readyz" ? ready : undefined;
    if (!checks) {
      response.writeHead(404).end("not found\n");
      return;
    }
    const { ok, report } = await runHealthChecks(checks);
    response.writeHead(ok ? 200 : 500, { "content-type": "text/plain" }).end(report);
  };
}
