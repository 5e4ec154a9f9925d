import { readFileSync, writeFileSync } from "node:fs";
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
 * Reads a kube-apiserver audit log as the in-memory server's request log: one {@link RequestRecord}
 * per completed request, from byte `offset` on (what `clearRequests()` skips). Requests the server
 * makes to itself (`system:apiserver`) and those of kube-controller-manager are left out, as the
 * in-memory server makes none (its garbage collector and namespace finalizer run inside it).
 */
export function readAuditLog(logFile: string, offset: number): RequestRecord[] {
  let text: string;
  try {
    text = readFileSync(logFile).subarray(offset).toString("utf8");
  } catch {
    return [];
  }
  const records: RequestRecord[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let event: AuditEvent;
    try {
      event = JSON.parse(line) as AuditEvent;
    } catch {
      continue; // a line still being written
    }
    if (event.stage !== "ResponseComplete" || INTERNAL_USERS.has(event.user?.username ?? ""))
      continue;
    const uri = new URL(event.requestURI ?? "/", "https://audit.invalid");
    const query = Object.fromEntries(uri.searchParams);
    const verb = event.verb ?? "";
    const started = new Date(event.requestReceivedTimestamp ?? 0);
    const ref = event.objectRef;
    records.push({
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
    });
  }
  return records;
}
