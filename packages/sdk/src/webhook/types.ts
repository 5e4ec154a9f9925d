/** The group, version and kind of an admitted object. */
export interface GroupVersionKind {
  /** API group, `""` for core. */
  group: string;
  /** API version within the group. */
  version: string;
  /** The object's kind, e.g. `FooMachinePool`, as the API server sends it in `request.kind`. */
  kind: string;
}

/** What the API server asks a webhook (`admission.k8s.io/v1` `AdmissionRequest`). */
export interface AdmissionRequest {
  /** Identifies this call; echoed in the response. */
  uid: string;
  /** Kind of the object. */
  kind: GroupVersionKind;
  /** Resource (`group`, `version`, `resource` plural). */
  resource: { group: string; version: string; resource: string };
  /** Subresource, e.g. `status`. */
  subResource?: string;
  /** Object name (may be empty on CREATE with generateName). */
  name?: string;
  /** Namespace of the object; absent for cluster-scoped kinds. */
  namespace?: string;
  /** What the API server is about to do with the object; `UPDATE` also carries `oldObject`. */
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** Who asked. */
  userInfo?: { username?: string; uid?: string; groups?: string[] };
  /** The new object (CREATE, UPDATE). */
  object?: Record<string, unknown> | null;
  /** The old object (UPDATE, DELETE). */
  oldObject?: Record<string, unknown> | null;
  /** `true` for a dry run (nothing is persisted; the webhook must have no side effects). */
  dryRun?: boolean;
  /** The operation's options (CreateOptions, UpdateOptions, …). */
  options?: Record<string, unknown> | null;
}

/** A webhook's answer (`admission.k8s.io/v1` `AdmissionResponse`). */
export interface AdmissionResponse {
  /** The `request.uid` this answers; the API server rejects a response whose uid does not match. */
  uid: string;
  /** Whether the request may proceed. */
  allowed: boolean;
  /** Why not (shown to the client when denied). */
  status?: { code: number; message: string; reason?: string };
  /** Base64 JSON patch (mutating webhooks). */
  patch?: string;
  /** `JSONPatch` when `patch` is set. */
  patchType?: "JSONPatch";
  /** Warnings returned to the client. */
  warnings?: string[];
}

/** An admission decision before the server adds the uid: allow, deny, or allow with a patch. */
export type AdmissionResult = Omit<AdmissionResponse, "uid">;

/**
 * Serves one webhook path: turns a request into a decision. Throwing answers an admission error. A
 * handler that carries `kinds` (see `forKinds`) is only shown reviews of those kinds: the server denies
 * a review of any other kind (400, naming both) before the handler runs.
 */
export type AdmissionHandler = ((
  request: AdmissionRequest,
) => Promise<AdmissionResult> | AdmissionResult) & {
  /** The kinds (`request.kind`: group, version and kind) this handler judges; absent: any kind. */
  readonly kinds?: readonly GroupVersionKind[];
};
