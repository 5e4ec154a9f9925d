/**
 * One connection attempt to a workload cluster, within the cache's `connectTimeoutMs`: read the
 * Cluster's `<cluster>-kubeconfig` Secret, parse it as data (never running or reading anything it
 * names), list a Node to prove the server answers, and start a Node informer whose cache holds each
 * Node's projection. Every failure is a {@link WorkloadClusterUnavailableError} whose reason and
 * message say what to fix, never what the Secret holds.
 *
 * @module
 */
import type { V1Secret } from "@kubernetes/client-node";
import { InformerCache } from "../runtime/cache.js";
import { KubeClient } from "../runtime/client.js";
import { isNotFound, TlsMaterialError } from "../runtime/errors.js";
import {
  KubeconfigRefusedError,
  MAX_KUBECONFIG_BYTES,
  parseWorkloadKubeconfig,
} from "../runtime/kubeconfig.js";
import type { Kubeconfig } from "../runtime/kubeconfig-loader.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import {
  NodeResource,
  type ObjectKey,
  objectKeyString,
  resourcePath,
  SecretResource,
} from "../runtime/resource.js";
import {
  type ClusterCacheOptions,
  WORKLOAD_MAX_CONNECTIONS_PER_SERVER,
  type WorkloadClusterConnection,
  type WorkloadClusterEvent,
} from "./options.js";
import { StringTable } from "./string-table.js";
import {
  describeWorkloadFailure,
  WorkloadClusterUnavailableError,
  type WorkloadClusterUnavailableReason,
} from "./unavailable.js";
import {
  indexNodeByProviderID,
  NODE_PROVIDER_ID_INDEX,
  projectWorkloadNode,
  type WorkloadNode,
  WorkloadNodeResource,
} from "./workload-node.js";

/** The suffix of a Cluster's kubeconfig Secret: `<cluster>-kubeconfig`. */
export const KUBECONFIG_SUFFIX = "-kubeconfig";

/** A live connection as the cache keeps it: the public part, its Node cache, its probe. */
export interface Connection extends WorkloadClusterConnection {
  readonly cache: InformerCache;
  readonly secretVersion: string;
  readonly stopHandlers: (() => void)[];
  probeTimer: NodeJS.Timeout | undefined;
  probeFailures: number;
}

/** One Cluster's entry in the cache: its connection, the attempt under way, the last failure. */
export interface Accessor {
  connection?: Connection;
  connecting?: Promise<Connection>;
  failure?: { error: WorkloadClusterUnavailableError; at: number; secretVersion: string };
  failures: number;
  /** The Secret's resourceVersion as last seen by an event (`deleted` once it is gone). */
  seenSecretVersion?: string;
}

/** What an attempt needs of its {@link ClusterCache}. */
export interface ConnectContext {
  /** The management cluster's client, which reads the kubeconfig Secret. */
  readonly managementClient: KubeClient;
  readonly options: ClusterCacheOptions;
  readonly timeoutMs: number;
  readonly log: RuntimeLogger;
  /** Whether the cache was stopped meanwhile (the new connection is then closed, not kept). */
  isStopped(): boolean;
  /** Hands a workload cluster's event to the cache's listeners. */
  emit(event: WorkloadClusterEvent): void;
}

/**
 * Connects to the workload cluster of `cluster`, or throws a {@link WorkloadClusterUnavailableError}
 * (with the Secret's resourceVersion as `secretVersion`) once `connectTimeoutMs` has passed.
 */
export function connectWithin(context: ConnectContext, cluster: ObjectKey): Promise<Connection> {
  const abort = new AbortController();
  const where = `Secret ${cluster.namespace ?? ""}/${cluster.name}${KUBECONFIG_SUFFIX}`;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(
        Object.assign(
          new WorkloadClusterUnavailableError(
            cluster,
            "WorkloadClusterUnreachable",
            `the workload cluster of ${where} did not connect within ${context.timeoutMs} ms (connectTimeoutMs); check that its API server answers`,
            0,
          ),
          { secretVersion: "" },
        ),
      );
    }, context.timeoutMs);
  });
  const attempt = open(context, cluster, abort.signal);
  // A late result of an attempt that lost the race is dropped (open stops its cache itself).
  attempt.catch(() => undefined);
  return Promise.race([attempt, deadline]).finally(() => clearTimeout(timer));
}

async function open(
  context: ConnectContext,
  cluster: ObjectKey,
  signal: AbortSignal,
): Promise<Connection> {
  const namespace = cluster.namespace ?? "";
  const secretName = `${cluster.name}${KUBECONFIG_SUFFIX}`;
  const where = `Secret ${namespace}/${secretName}`;
  const unavailable = (
    reason: WorkloadClusterUnavailableReason,
    message: string,
    secretVersion: string,
  ) =>
    Object.assign(new WorkloadClusterUnavailableError(cluster, reason, message, 0), {
      secretVersion,
    });
  let secret: V1Secret;
  try {
    secret = await context.managementClient.get(
      SecretResource,
      { namespace, name: secretName },
      { signal },
    );
  } catch (error) {
    if (isNotFound(error)) {
      throw unavailable(
        "KubeconfigSecretNotFound",
        `${where} does not exist: the control plane provider writes it once the workload cluster's API server is up`,
        "",
      );
    }
    throw unavailable(
      "WorkloadClusterUnreachable",
      `cannot read ${where} from the management cluster: ${(error as Error).message}`,
      "",
    );
  }
  const secretVersion = secret.metadata?.resourceVersion ?? "";
  const encoded = secret.data?.value;
  if (encoded === undefined || encoded === "") {
    throw unavailable(
      "KubeconfigSecretInvalid",
      `${where} has no "value" key: put the workload cluster's kubeconfig under data.value`,
      secretVersion,
    );
  }
  // Measured before decoding: base64 is 4 characters per 3 bytes.
  if (
    typeof encoded !== "string" ||
    Math.floor((encoded.length * 3) / 4) > MAX_KUBECONFIG_BYTES + 2
  ) {
    throw unavailable(
      "KubeconfigSecretInvalid",
      `kubeconfig ${where}: data.value is larger than ${MAX_KUBECONFIG_BYTES / 1024 / 1024} MiB; write a kubeconfig with only the workload cluster's context`,
      secretVersion,
    );
  }
  let kubeConfig: Kubeconfig;
  try {
    kubeConfig = parseWorkloadKubeconfig(
      Buffer.from(encoded, "base64").toString("utf8"),
      where,
      context.options.allowInsecureSkipTLSVerify ? { allowInsecureSkipTLSVerify: true } : {},
    );
  } catch (error) {
    // The refusal names the field; anything else (a parser bug) must not leak the content either.
    const message =
      error instanceof KubeconfigRefusedError
        ? error.message
        : `kubeconfig ${where}: data.value is not a valid kubeconfig (YAML with clusters, users, contexts and current-context)`;
    throw unavailable("KubeconfigSecretInvalid", message, secretVersion);
  }
  const server = kubeConfig.getCurrentCluster()?.server ?? "";
  const client = new KubeClient(kubeConfig, {
    fieldManager: context.options.fieldManager ?? context.managementClient.fieldManager,
    requestTimeoutMs: context.timeoutMs,
    maxThrottleRetries: 0,
    maxConnectionsPerServer:
      context.options.maxConnectionsPerServer ?? WORKLOAD_MAX_CONNECTIONS_PER_SERVER,
  });
  const cache = new InformerCache({
    client,
    informerDefaults: { ...context.options.informer },
    logger: context.log.child({ cluster: objectKeyString(cluster) }),
  });
  const nodes = cache.informerFor(WorkloadNodeResource, {
    // One table per workload cluster: what one cluster's Nodes send never crowds out another's.
    transform: (
      (strings) => (node: WorkloadNode) =>
        projectWorkloadNode(node, strings.intern)
    )(new StringTable()),
    indexers: { [NODE_PROVIDER_ID_INDEX]: indexNodeByProviderID },
  });
  // Probe first: an informer retries forever, a connection attempt must fail with a reason.
  try {
    await client.request({
      method: "GET",
      path: resourcePath(NodeResource, {}),
      query: { limit: 1 },
      signal,
    });
  } catch (error) {
    client.close();
    if (error instanceof TlsMaterialError) {
      throw unavailable(
        "KubeconfigSecretInvalid",
        `kubeconfig ${where}: ${error.message}`,
        secretVersion,
      );
    }
    throw unavailable(
      "WorkloadClusterUnreachable",
      `the workload cluster's API server ${server} (from ${where}) did not answer a Node list: ${describeWorkloadFailure(error, context.timeoutMs)}`,
      secretVersion,
    );
  }
  if (signal.aborted) {
    client.close();
    throw new Error("connection attempt timed out");
  }
  cache.start();
  const stopOnAbort = () => void cache.stop();
  signal.addEventListener("abort", stopOnAbort, { once: true });
  try {
    await cache.waitForSync(context.timeoutMs);
  } catch {
    await cache.stop();
    client.close();
    throw unavailable(
      "WorkloadClusterUnreachable",
      `the Node cache of the workload cluster ${server} (from ${where}) did not sync within ${context.timeoutMs} ms`,
      secretVersion,
    );
  } finally {
    signal.removeEventListener("abort", stopOnAbort);
  }
  if (context.isStopped() || signal.aborted) {
    await cache.stop();
    client.close();
    throw new Error(
      context.isStopped() ? "ClusterCache is stopped" : "connection attempt timed out",
    );
  }
  const connection: Connection = {
    cluster,
    client,
    nodes,
    cache,
    secretVersion,
    stopHandlers: [],
    probeTimer: undefined,
    probeFailures: 0,
  };
  connection.stopHandlers.push(
    nodes.addEventHandler({
      onAdd: (node) => context.emit({ cluster, type: "node", node }),
      onUpdate: (oldNode, node, meta) => {
        if (!meta.initial) context.emit({ cluster, type: "node", node, oldNode });
      },
      onDelete: (node) => context.emit({ cluster, type: "node", node }),
    }),
  );
  return connection;
}
