/**
 * The cloud calls the driver makes. Implement `CloudClient` with your cloud's SDK (an auto scaling
 * group + launch template API, or a managed instance group + instance template API); the tests use an
 * in-memory implementation (test/memory-cloud.ts) with the same behaviour. Each pool's client is
 * connected with the credentials its Cluster names (src/credentials.ts).
 */

/** What a credentials Secret holds (keys `endpoint` and `token`). TODO: your cloud's credentials. */
export interface CloudCredentials {
  /** The cloud API's URL (a region endpoint, or an emulator in tests). */
  readonly endpoint: string;
  /** The access token. Secret: never log it. */
  readonly token: string;
}

/** Connects a client with a pool's credentials (cheap: the kit caches the result per pool). */
export type ConnectCloud = (credentials: CloudCredentials) => CloudClient;

/** Raised by a `CloudClient` when the cloud refuses its credentials (401/403). */
export class CloudUnauthorizedError extends Error {}

/** One version of a launch template: what new instances boot from. */
export interface CloudTemplateVersion {
  readonly version: string;
  /** Tags stored with the version (the kit's template stamp lives here). */
  readonly tags: Readonly<Record<string, string>>;
  readonly createdAt: number;
}

/** A launch template and its versions. */
export interface CloudTemplate {
  readonly name: string;
  /** Tags of the template itself: who owns it (`poolOwnerTags`). */
  readonly tags: Readonly<Record<string, string>>;
  readonly versions: readonly CloudTemplateVersion[];
}

/** One instance of a group. */
export interface CloudInstance {
  readonly id: string;
  readonly zone: string;
  readonly state: "pending" | "running" | "terminating" | "terminated";
  readonly templateVersion: string;
  readonly launchedAt: number;
}

/** A scaling group as the cloud describes it. */
export interface CloudGroup {
  readonly name: string;
  readonly desired: number;
  readonly templateVersion: string;
  readonly zones: readonly string[];
  /** Tags of the group: who owns it (`poolOwnerTags`). */
  readonly tags: Readonly<Record<string, string>>;
  readonly instances: readonly CloudInstance[];
}

/** Raised by a `CloudClient` when the thing asked for does not exist. */
export class CloudNotFoundError extends Error {}

/** The calls the driver needs. Every method may throw; the kit retries with backoff. */
export interface CloudClient {
  /** TODO: describe the launch template `name` with its versions, or `undefined` when it does not exist. */
  describeTemplate(name: string): Promise<CloudTemplate | undefined>;
  /**
   * TODO: create a version of template `name` with `tags` on the version (the kit's stamp), creating
   * the template first with `templateTags` (ownership) if it does not exist.
   */
  createTemplateVersion(
    name: string,
    input: {
      instanceType: string;
      userData: string;
      tags: Record<string, string>;
      templateTags: Record<string, string>;
    },
  ): Promise<CloudTemplateVersion>;
  /** TODO: delete some versions, or the whole template when `versions` is absent. Gone is fine. */
  deleteTemplate(name: string, versions?: readonly string[]): Promise<void>;
  /** TODO: describe the group `name`, or `undefined` when it does not exist. */
  describeGroup(name: string): Promise<CloudGroup | undefined>;
  /**
   * TODO: create the group with its ownership `tags`. Without `desired` the cloud picks the size
   * (an external autoscaler manages the replicas).
   */
  createGroup(
    name: string,
    input: {
      desired?: number;
      templateVersion: string;
      zones: readonly string[];
      tags: Record<string, string>;
    },
  ): Promise<void>;
  /** TODO: change only the fields given. */
  updateGroup(
    name: string,
    input: { desired?: number; templateVersion?: string; zones?: readonly string[] },
  ): Promise<void>;
  /** TODO: delete the group and its instances. Gone is fine. */
  deleteGroup(name: string): Promise<void>;
  /** TODO: terminate one instance; `decrementDesired` shrinks the group instead of replacing it. */
  terminateInstance(name: string, instanceId: string, decrementDesired: boolean): Promise<void>;
}
