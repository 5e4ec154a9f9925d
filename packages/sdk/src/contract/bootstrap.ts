import { createHash } from "node:crypto";
import { inspect } from "node:util";
import { httpStatusOf } from "../patch/transport.js";
import { KubeClient } from "../runtime/client.js";
import { isKubeconfigSource, type KubeconfigSource } from "../runtime/credentials.js";
import { SecretResource } from "../runtime/resource.js";
import { type AnyObject, readMachinePool } from "./readers.js";

/** Reads a Secret's `data` (base64 values, as the API returns them); `undefined` when it does not exist. */
export type SecretReader = (
  namespace: string,
  name: string,
) => Promise<{ data?: Record<string, string> } | undefined>;

/** The format of bootstrap data: `cloud-config` (default) or `ignition` (§7). */
export type BootstrapDataFormat = "cloud-config" | "ignition" | (string & {});

const REDACTED = "[redacted]";

/**
 * Bootstrap data read from the MachinePool's data secret. The payload is held privately: `JSON.stringify`,
 * `console.log`/`util.inspect` and `String()` show the secret reference, format and hash, never the data.
 */
export class BootstrapData {
  /** `cloud-config` or `ignition`. */
  readonly format: BootstrapDataFormat;
  /** `sha256:<hex>` of the payload: roll instances when it changes. */
  readonly hash: string;
  /** Where the data came from. */
  readonly secretRef: { readonly namespace: string; readonly name: string };
  readonly #value: Buffer;

  /** Creates the value (normally done by {@link readBootstrapData}). */
  constructor(
    value: Buffer,
    format: BootstrapDataFormat,
    secretRef: { namespace: string; name: string },
  ) {
    this.#value = Buffer.from(value);
    this.format = format;
    this.secretRef = Object.freeze({ ...secretRef });
    this.hash = `sha256:${createHash("sha256").update(value).digest("hex")}`;
  }

  /** The payload bytes (a copy). */
  bytes(): Buffer {
    return Buffer.from(this.#value);
  }

  /** The payload as UTF-8 text. */
  text(): string {
    return this.#value.toString("utf8");
  }

  /** The payload base64-encoded (as most cloud APIs want user data). */
  base64(): string {
    return this.#value.toString("base64");
  }

  /** A log-safe description. */
  toJSON(): {
    secretRef: { namespace: string; name: string };
    format: string;
    hash: string;
    value: string;
  } {
    return {
      secretRef: { ...this.secretRef },
      format: this.format,
      hash: this.hash,
      value: REDACTED,
    };
  }

  /** A log-safe description. */
  toString(): string {
    return `BootstrapData(${this.secretRef.namespace}/${this.secretRef.name}, ${this.format}, ${this.hash})`;
  }

  /** A log-safe description for `console.log` / `util.inspect`. */
  [inspect.custom](): string {
    return this.toString();
  }
}

// One client per kubeconfig, as the patch helper keeps one: its connections are reused.
const clients = new WeakMap<KubeconfigSource, KubeClient>();

function secretReaderFor(source: KubeconfigSource | SecretReader): SecretReader {
  if (!isKubeconfigSource(source)) return source as SecretReader;
  let client = clients.get(source);
  if (!client) {
    client = new KubeClient(source, { fieldManager: "capi-ts-bootstrap" });
    clients.set(source, client);
  }
  const reader = client;
  return async (namespace, name) => {
    try {
      const secret = await reader.get(SecretResource, { namespace, name });
      return secret.data ? { data: secret.data } : {};
    } catch (error) {
      if (httpStatusOf(error) === 404) return undefined;
      // Never forward the response body: it could echo secret content.
      throw new Error(
        `reading bootstrap data secret ${namespace}/${name} failed with HTTP ${httpStatusOf(error) ?? "error"}`,
      );
    }
  };
}

/**
 * Reads the bootstrap data of a MachinePool (§7): the Secret named by
 * `spec.template.spec.bootstrap.dataSecretName` in the MachinePool's namespace, key `value` (payload) and
 * optional `format` (default `cloud-config`). Returns `undefined` while `dataSecretName` is unset
 * (bootstrap not ready: wait, and report `WaitingForBootstrapData`). Errors name the secret, never its content.
 *
 * @example
 * ```ts
 * const data = await readBootstrapData(kubeConfig, machinePool);
 * if (!data) return { requeueAfter: 0 }; // the MachinePool update will come
 * await cloud.setUserData(data.base64());
 * ```
 */
export async function readBootstrapData(
  source: KubeconfigSource | SecretReader,
  machinePool: AnyObject,
): Promise<BootstrapData | undefined> {
  const mp = readMachinePool(machinePool);
  const name = mp.bootstrapDataSecretName;
  if (!name) return undefined;
  const namespace = mp.namespace;
  const secret = await secretReaderFor(source)(namespace, name);
  if (!secret) {
    throw new Error(
      `bootstrap data secret ${namespace}/${name} named by MachinePool ${namespace}/${mp.name} does not exist (yet); retry later`,
    );
  }
  const encoded = secret.data?.value;
  if (encoded === undefined) {
    throw new Error(
      `bootstrap data secret ${namespace}/${name} has no "value" key; the bootstrap provider must write it`,
    );
  }
  const format = secret.data?.format
    ? Buffer.from(secret.data.format, "base64").toString("utf8")
    : "cloud-config";
  return new BootstrapData(Buffer.from(encoded, "base64"), format, { namespace, name });
}
