import { randomInt } from "node:crypto";
import { Labels } from "@capi-ts/sdk/contract";
import {
  type InformerCache,
  isNotFound,
  type KubeClient,
  type ObjectKey,
  type ReconcileRequest,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import type { V1Secret } from "@kubernetes/client-node";
import type { ContractResolver } from "./contract-version.js";
import {
  type ExternalObject,
  groupKindOf,
  isDefinedRef,
  isDeleting,
  type MachinePoolObject,
  MachinePoolResource,
} from "./types.js";
import type { RecordingWriter } from "./writes.js";

/** A bootstrap config kind the stand-in serves, e.g. `{ apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig" }`. */
export interface BootstrapConfigKind {
  /** The config kind's API group, e.g. `bootstrap.cluster.x-k8s.io`. */
  apiGroup: string;
  /** The config kind, e.g. `KubeadmConfig`; the stand-in reconciles every object of it. */
  kind: string;
}

/** Options of the bootstrap stand-in ({@link CapiCoreOptions.bootstrap}). */
export interface BootstrapStandInOptions {
  /**
   * Bootstrap config kinds to act as the bootstrap provider for. For a MachinePool whose
   * `bootstrap.configRef` names one, the stand-in writes the data Secret (named like the config, owned
   * by it) and reports `status.dataSecretName` + `status.initialization.dataSecretCreated` (v1beta1
   * contract: `status.ready`) on the config; core then copies the name into the MachinePool. The CRD
   * must carry a contract label, as for core. Default: `KubeadmConfig`.
   */
  configKinds?: BootstrapConfigKind[];
  /**
   * Also serve MachinePools with neither `configRef` nor `dataSecretName` ("bring your own data"):
   * write `<pool>-bootstrap` and set `spec.template.spec.bootstrap.dataSecretName` directly. Default true.
   */
  byMachinePool?: boolean;
  /**
   * Create a `kube-system/bootstrap-token-<id>` Secret per token, as kubeadm does, and delete it when
   * the token is rotated, so a fake kubelet can check a token against the API server. Default true.
   */
  tokenSecrets?: boolean;
}

const DEFAULT_CONFIG_KINDS: BootstrapConfigKind[] = [
  { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig" },
];

const TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const TOKEN_PATTERN = /\b([a-z0-9]{6})\.([a-z0-9]{16})\b/;

function randomString(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)];
  return out;
}

/** A kubeadm-style bootstrap token `<6>.<16>` of lower-case letters and digits. */
function newToken(): string {
  return `${randomString(6)}.${randomString(16)}`;
}

function tokenId(token: string): string {
  return token.slice(0, token.indexOf("."));
}

function bootstrapData(token: string, machinePool: string): string {
  return [
    "#cloud-config",
    `# Bootstrap data written by the capi-ts bootstrap stand-in for MachinePool ${machinePool}.`,
    `token: ${token}`,
    "runcmd:",
    `  - kubeadm join --token ${token} --discovery-token-unsafe-skip-ca-verification`,
    "",
  ].join("\n");
}

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

interface PoolData {
  secretName: string;
  namespace: string;
  token: string;
}

/**
 * A small bootstrap provider for tests: writes the bootstrap data Secret of MachinePools (key `value`
 * with a cloud-config carrying a kubeadm-style join token, key `format: cloud-config`) and rotates the
 * token on demand, as kubeadm's token refresh does. Reached through {@link CapiCore.bootstrap}.
 *
 * @example
 * ```ts
 * const core = await startCapiCore({ kubeConfig: api.kubeConfig });
 * const first = core.bootstrap?.tokenOf({ namespace: "default", name: "pool-1" });
 * const second = await core.bootstrap?.rotateToken({ namespace: "default", name: "pool-1" });
 * core.bootstrap?.isTokenValid(first ?? ""); // false: rotation revoked it
 * ```
 */
export interface BootstrapStandIn {
  /** The current join token of a MachinePool's bootstrap data, once written. */
  tokenOf(machinePool: ObjectKey): string | undefined;
  /** The name of the data Secret the stand-in wrote for a MachinePool, once written. */
  secretNameOf(machinePool: ObjectKey): string | undefined;
  /**
   * True when the token (or the first token found in a bootstrap payload, e.g. an instance's userData)
   * is one the stand-in issued and has not revoked.
   */
  isTokenValid(tokenOrUserData: string): boolean;
  /**
   * Rewrites the MachinePool's bootstrap data with a new token under the same Secret name (kubeadm's
   * token refresh) and revokes the previous token (its `bootstrap-token-<id>` Secret is deleted) unless
   * `revokePrevious: false`. Resolves to the new token. Throws if no data was written for that pool yet.
   */
  rotateToken(machinePool: ObjectKey, options?: { revokePrevious?: boolean }): Promise<string>;
}

/** The stand-in's implementation (internal). */
export class BootstrapStandInController implements BootstrapStandIn {
  private readonly client: KubeClient;
  private readonly cache: InformerCache;
  private readonly writer: RecordingWriter;
  private readonly resolver: ContractResolver;
  private readonly configKinds: Set<string>;
  private readonly byMachinePool: boolean;
  private readonly tokenSecrets: boolean;
  private readonly pools = new Map<string, PoolData>();
  private readonly validTokens = new Set<string>();

  constructor(deps: {
    client: KubeClient;
    cache: InformerCache;
    writer: RecordingWriter;
    resolver: ContractResolver;
    options: BootstrapStandInOptions;
  }) {
    this.client = deps.client;
    this.cache = deps.cache;
    this.writer = deps.writer;
    this.resolver = deps.resolver;
    this.configKinds = new Set((deps.options.configKinds ?? DEFAULT_CONFIG_KINDS).map(groupKindOf));
    this.byMachinePool = deps.options.byMachinePool ?? true;
    this.tokenSecrets = deps.options.tokenSecrets ?? true;
  }

  /** The current join token of a MachinePool's bootstrap data, once written. */
  tokenOf(machinePool: ObjectKey): string | undefined {
    return this.pools.get(`${machinePool.namespace ?? ""}/${machinePool.name}`)?.token;
  }

  /** The name of the data Secret the stand-in wrote for a MachinePool, once written. */
  secretNameOf(machinePool: ObjectKey): string | undefined {
    return this.pools.get(`${machinePool.namespace ?? ""}/${machinePool.name}`)?.secretName;
  }

  /**
   * True when the token (or the first token found in a bootstrap payload, e.g. an instance's userData)
   * is one the stand-in issued and has not revoked.
   */
  isTokenValid(tokenOrUserData: string): boolean {
    const match = TOKEN_PATTERN.exec(tokenOrUserData);
    return match !== null && this.validTokens.has(`${match[1]}.${match[2]}`);
  }

  /**
   * Rewrites the MachinePool's bootstrap data with a new token under the same Secret name (kubeadm's
   * token refresh) and revokes the previous token (its `bootstrap-token-<id>` Secret is deleted).
   * Resolves to the new token. Throws if no data was written for that pool yet.
   */
  async rotateToken(
    machinePool: ObjectKey,
    options: { revokePrevious?: boolean } = {},
  ): Promise<string> {
    const key = `${machinePool.namespace ?? ""}/${machinePool.name}`;
    const pool = this.pools.get(key);
    if (!pool) {
      throw new Error(
        `the bootstrap stand-in has written no bootstrap data for MachinePool ${key} yet; wait until spec.template.spec.bootstrap.dataSecretName is set before rotating`,
      );
    }
    const previous = pool.token;
    const token = newToken();
    await this.createTokenSecret(token, key);
    await this.writer.mergePatch(
      SecretResource,
      { namespace: pool.namespace, name: pool.secretName },
      { data: { value: b64(bootstrapData(token, key)) } },
      { reason: "rotate the bootstrap token (same Secret name, new content)", machinePool: key },
    );
    pool.token = token;
    if (options.revokePrevious ?? true) {
      this.validTokens.delete(previous);
      if (this.tokenSecrets) {
        await this.writer.delete(
          SecretResource,
          { namespace: "kube-system", name: `bootstrap-token-${tokenId(previous)}` },
          { reason: "revoke the previous bootstrap token", machinePool: key },
        );
      }
    }
    return token;
  }

  /** Reconciles one MachinePool (the stand-in's controller). */
  async reconcile(request: ReconcileRequest): Promise<undefined> {
    const mp = await this.cache.get(MachinePoolResource, request);
    if (!mp || isDeleting(mp)) return undefined;
    const key = `${request.namespace ?? ""}/${request.name}`;
    const bootstrap = mp.spec?.template?.spec?.bootstrap;
    const configRef = bootstrap?.configRef;
    if (isDefinedRef(configRef)) {
      if (!this.configKinds.has(groupKindOf(configRef))) return undefined;
      const resolved = await this.resolver.resolve(configRef);
      const namespace = mp.metadata?.namespace ?? "";
      let config: ExternalObject;
      try {
        config = await this.client.get(resolved.resource, { namespace, name: configRef.name });
      } catch (error) {
        if (isNotFound(error)) {
          throw new Error(
            `bootstrap stand-in: ${configRef.kind} ${namespace}/${configRef.name} referenced by MachinePool ${key} does not exist yet`,
          );
        }
        throw error;
      }
      const secretName = config.metadata?.name ?? configRef.name;
      await this.ensureSecret(mp, secretName, {
        apiVersion: config.apiVersion ?? `${configRef.apiGroup}/${resolved.resource.version}`,
        kind: configRef.kind,
        name: secretName,
        uid: config.metadata?.uid ?? "",
      });
      const status = config.status ?? {};
      const v1beta1 = resolved.contractVersion === "v1beta1";
      const created = v1beta1
        ? status.ready === true
        : (status.initialization as { dataSecretCreated?: boolean } | undefined)
            ?.dataSecretCreated === true;
      if (!created || status.dataSecretName !== secretName) {
        const patch = v1beta1
          ? { status: { dataSecretName: secretName, ready: true } }
          : { status: { dataSecretName: secretName, initialization: { dataSecretCreated: true } } };
        await this.writer.mergePatch(
          resolved.resource,
          { namespace, name: configRef.name },
          patch,
          { reason: "report the bootstrap data secret on the bootstrap config", machinePool: key },
          resolved.resource.subresources?.status ? "status" : undefined,
        );
      }
      return undefined;
    }
    const ours = this.pools.get(key);
    if (bootstrap?.dataSecretName !== undefined && ours?.secretName !== bootstrap.dataSecretName) {
      return undefined; // the user brought their own data
    }
    if (!this.byMachinePool) return undefined;
    const secretName = bootstrap?.dataSecretName ?? `${request.name}-bootstrap`;
    await this.ensureSecret(mp, secretName, {
      apiVersion: mp.apiVersion ?? "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      name: mp.metadata?.name ?? "",
      uid: mp.metadata?.uid ?? "",
    });
    if (bootstrap?.dataSecretName === undefined) {
      await this.writer.mergePatch(
        MachinePoolResource,
        request,
        { spec: { template: { spec: { bootstrap: { dataSecretName: secretName } } } } },
        {
          reason: "set spec.template.spec.bootstrap.dataSecretName (bring-your-own bootstrap data)",
          machinePool: key,
        },
      );
    }
    return undefined;
  }

  private async ensureSecret(
    mp: MachinePoolObject,
    secretName: string,
    owner: { apiVersion: string; kind: string; name: string; uid: string },
  ): Promise<void> {
    const namespace = mp.metadata?.namespace ?? "";
    const key = `${namespace}/${mp.metadata?.name ?? ""}`;
    let existing: V1Secret | undefined;
    try {
      existing = await this.client.get(SecretResource, { namespace, name: secretName });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    if (existing) {
      if (!this.pools.has(key)) {
        // Adopt what an earlier run wrote so rotation and validity keep working after a restart.
        const value = Buffer.from(existing.data?.value ?? "", "base64").toString("utf8");
        const match = TOKEN_PATTERN.exec(value);
        if (match) {
          const token = `${match[1]}.${match[2]}`;
          this.pools.set(key, { secretName, namespace, token });
          this.validTokens.add(token);
        }
      }
      return;
    }
    const token = this.pools.get(key)?.token ?? newToken();
    await this.createTokenSecret(token, key);
    await this.writer.create(
      SecretResource,
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: secretName,
          namespace,
          labels: { [Labels.ClusterName]: mp.spec?.clusterName ?? "" },
          ownerReferences: [{ ...owner, controller: true }],
        },
        type: "cluster.x-k8s.io/secret",
        data: { value: b64(bootstrapData(token, key)), format: b64("cloud-config") },
      },
      { reason: "write the bootstrap data secret", machinePool: key },
    );
    this.pools.set(key, { secretName, namespace, token });
  }

  private async createTokenSecret(token: string, machinePool: string): Promise<void> {
    this.validTokens.add(token);
    if (!this.tokenSecrets) return;
    const [id, secret] = token.split(".") as [string, string];
    try {
      await this.writer.create(
        SecretResource,
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
          type: "bootstrap.kubernetes.io/token",
          data: {
            "token-id": b64(id),
            "token-secret": b64(secret),
            "usage-bootstrap-authentication": b64("true"),
            "usage-bootstrap-signing": b64("true"),
          },
        },
        { reason: "create the kubeadm bootstrap token", machinePool },
      );
    } catch (error) {
      this.validTokens.delete(token);
      throw error;
    }
  }
}
