import { closeSync, openSync, readSync, statSync, writeFileSync } from "node:fs";
import type { RequestRecord } from "../apiserver/http.js";

/**
 * The audit policy of a control plane started with `requestLog: true`: every request at the Metadata
 * level (who, what, the answer; never a body, so no secret reaches the log), once it completed.
 */
const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
`;

/** Writes the policy file and returns the kube-apiserver flags that turn the audit log on. */
export function auditArgs(policyFile: string, logFile: string): string[] {
  writeFileSync(policyFile, POLICY);
  return [
    `--audit-policy-file=${policyFile}`,
    `--audit-log-path=${logFile}`,
    "--audit-log-format=json",
    // Written before the response is sent, so a request the caller saw answered is in the log.
    "--audit-log-mode=blocking",
    "--audit-log-maxbackup=0",
  ];
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  requestURI?: string;
  userAgent?: string;
  user?: { username?: string };
  objectRef?: {
    apiGroup?: string;
    apiVersion?: string;
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
  };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

const METHODS: Record<string, string> = {
  get: "GET",
  list: "GET",
  watch: "GET",
  create: "POST",
  update: "PUT",
  patch: "PATCH",
  delete: "DELETE",
  deletecollection: "DELETE",
};

/** The user kube-controller-manager authenticates as on the test bed's control plane. */
export const CONTROLLER_MANAGER_USER = "system:kube-controller-manager";

/** Users whose requests the in-memory server has no counterpart of: its own, and its controllers'. */
const INTERNAL_USERS = new Set(["system:apiserver", CONTROLLER_MANAGER_USER]);

/**
 * A kube-apiserver audit log read as the in-memory server's request log: one {@link RequestRecord}
 * per completed request. Requests the server makes to itself (`system:apiserver`) and those of
 * kube-controller-manager are left out, as the in-memory server makes none (its garbage collector
 * and namespace finalizer run inside it).
 *
 * Each read parses only what the server appended since the last one: the conformance suite reads
 * the log every few tens of milliseconds while it waits for quiet, and a log of a whole run is tens
 * of megabytes, so parsing it from the start each time cost more CPU than the run's API servers.
 */
export class AuditLogReader {
  readonly #file: string;
  /** Bytes of the file parsed so far: always the end of a complete line. */
  #parsedTo = 0;
  #records: RequestRecord[] = [];

  /** A reader of `file` (which may not exist yet: the server creates it on its first request). */
  constructor(file: string) {
    this.#file = file;
  }

  /** Every request since the reader was made or last {@link AuditLogReader.clear}ed. */
  records(): RequestRecord[] {
    this.#catchUp();
    return [...this.#records];
  }

  /** Forgets the requests logged so far (a line still being written is skipped when it ends). */
  clear(): void {
    this.#catchUp();
    this.#records = [];
  }

  #catchUp(): void {
    let size: number;
    try {
      size = statSync(this.#file).size;
    } catch {
      return;
    }
    // A new file (the server started over): read it from its start.
    if (size < this.#parsedTo) this.#parsedTo = 0;
    if (size === this.#parsedTo) return;
    const chunk = Buffer.alloc(size - this.#parsedTo);
    const fd = openSync(this.#file, "r");
    let read: number;
    try {
      read = readSync(fd, chunk, 0, chunk.length, this.#parsedTo);
    } finally {
      closeSync(fd);
    }
    // Only complete lines: the rest is parsed once the server has finished writing it.
    const complete = chunk.subarray(0, read).lastIndexOf(0x0a) + 1;
    if (complete === 0) return;
    this.#parsedTo += complete;
    for (const line of chunk.subarray(0, complete).toString("utf8").split("\n")) {
      const record = recordOf(line);
      if (record) this.#records.push(record);
    }
  }
}

/** The request one line of the log records, or undefined for a line that is not one. */
function recordOf(line: string): RequestRecord | undefined {
  if (!line.startsWith("{")) return undefined;
  let event: AuditEvent;
  try {
    event = JSON.parse(line) as AuditEvent;
  } catch {
    return undefined;
  }
  if (event.stage !== "ResponseComplete" || INTERNAL_USERS.has(event.user?.username ?? ""))
    return undefined;
  const uri = new URL(event.requestURI ?? "/", "https://audit.invalid");
  const query = Object.fromEntries(uri.searchParams);
  const verb = event.verb ?? "";
  const started = new Date(event.requestReceivedTimestamp ?? 0);
  const ref = event.objectRef;
  return {
    verb,
    method: METHODS[verb] ?? verb.toUpperCase(),
    path: uri.pathname,
    query,
    ...(ref?.apiGroup !== undefined ? { group: ref.apiGroup } : ref ? { group: "" } : {}),
    ...(ref?.apiVersion ? { version: ref.apiVersion } : {}),
    ...(ref?.resource ? { resource: ref.resource } : {}),
    ...(ref?.subresource ? { subresource: ref.subresource } : {}),
    ...(ref?.namespace ? { namespace: ref.namespace } : {}),
    ...(ref?.name ? { name: ref.name } : {}),
    status: event.responseStatus?.code ?? 0,
    ...(query.fieldManager ? { fieldManager: query.fieldManager } : {}),
    ...(event.userAgent ? { userAgent: event.userAgent } : {}),
    startedAt: started,
    durationMs: Math.max(0, new Date(event.stageTimestamp ?? 0).getTime() - started.getTime()),
  };
}
