// Finding 5: secrets fed through every failure path of the kit — an HTTP-client error carrying its
// request (headers and body), a terminal error quoting the user data, a driver bug naming a
// credential, a failing classifyError — never reach a log line, an Event or a condition.
import { PassThrough } from "node:stream";
import { createLogger, DriverError } from "@capi-ts/sdk";
import { EventResource, registerSecret } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type Bed,
  createPool,
  eventually,
  getPool,
  groupName,
  ns,
  startBed,
} from "../provider/support.js";

/** A credential the driver registers, as the guide says (it also shows up in error messages). */
const REGISTERED_CREDENTIAL = "AKIACANARYREGISTERED0001";
/** A credential that only travels in the headers and body of an HTTP client's error. */
const HEADER_CREDENTIAL = "canary-header-credential-7f3a9c";

const lines: string[] = [];
let bed: Bed;
let userData = "";
let token = "";
let pool = "";

function axiosLikeError(message: string, body: string): Error {
  return Object.assign(new Error(message), {
    code: "ERR_BAD_RESPONSE",
    config: {
      url: "https://cloud.example/groups",
      headers: { Authorization: `AWS4-HMAC-SHA256 Credential=${HEADER_CREDENTIAL}` },
      data: body,
    },
    request: { _header: `POST /groups\r\nx-api-key: ${HEADER_CREDENTIAL}\r\n` },
    response: { status: 500, data: { echo: body } },
  });
}

beforeAll(async () => {
  registerSecret(REGISTERED_CREDENTIAL);
  const out = new PassThrough();
  out.on("data", (chunk: Buffer) => lines.push(...chunk.toString("utf8").split("\n")));
  let attempt = 0;
  bed = await startBed({
    manager: { logger: createLogger({ level: "trace", destination: out }) },
    wrapDriver: (driver) => ({
      ...driver,
      classifyError(error) {
        if (error instanceof Error && error.message.startsWith("classify-me")) {
          throw new Error(`classifier broke on ${REGISTERED_CREDENTIAL}`);
        }
        return driver.classifyError ? driver.classifyError(error) : undefined;
      },
      async createGroup(ctx, input) {
        attempt++;
        const body = JSON.stringify({ input, userData });
        if (attempt === 1) throw axiosLikeError("Request failed with status code 500", body);
        if (attempt === 2) {
          throw DriverError.terminal(
            "InvalidUserData",
            `the cloud refused user data ${userData} (token ${token}, key ${REGISTERED_CREDENTIAL})`,
            axiosLikeError("Request failed with status code 400", body),
          );
        }
        if (attempt === 3) throw new TypeError(`cannot read property of ${REGISTERED_CREDENTIAL}`);
        if (attempt === 4) throw new Error(`classify-me ${token}`);
        return driver.createGroup(ctx, input);
      },
      async createTemplateVersion(ctx, input) {
        userData = input.userData;
        token = /token: (\S+)/.exec(userData)?.[1] ?? "";
        return driver.createTemplateVersion(ctx, input);
      },
    }),
  });
  pool = await createPool(bed, { replicas: 1 });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

it("no canary in logs, Events or conditions across every failure path", {
  timeout: 60_000,
}, async () => {
  // The pool converges once the four failures are behind it.
  await eventually(async () => {
    if (bed.cloud.inspect.providerIds(groupName(pool)).length !== 1) throw new Error("not yet");
  }, 40_000);
  expect(userData).toContain("kubeadm join");
  expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  const events = (await bed.client.list(EventResource, { namespace: ns })).items;
  const object = await getPool(bed, pool);
  const everything = [
    ...lines,
    ...events.map((event) => `${event.reason} ${event.message}`),
    JSON.stringify(object.status?.conditions ?? []),
  ].join("\n");
  expect(lines.length).toBeGreaterThan(50);
  expect(everything).toContain("[REDACTED]");
  for (const canary of [
    REGISTERED_CREDENTIAL,
    HEADER_CREDENTIAL,
    token,
    userData,
    Buffer.from(userData).toString("base64"),
  ]) {
    expect(canary.length).toBeGreaterThan(8);
    expect(everything.includes(canary), `a canary leaked: ${canary.slice(0, 30)}`).toBe(false);
  }
});
