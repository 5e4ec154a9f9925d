/**
 * Errors real core logs for a pool that are part of its normal life, not a broken contract: before
 * its ClusterCache has connected to a new workload cluster, before its cache has seen a new Cluster,
 * optimistic-concurrency conflicts it retries by itself, a Machine whose deletion finished while
 * core still had it in its cache, and a rolled pool's Node gone before core's `nodeRefs` followed.
 *
 * Each pattern is as narrow as the message core writes, so that the same words about a live object
 * (a Machine that exists under another uid, a Machine core fails to patch for any other reason) still
 * fail the suite.
 */

/** Core's cache still lists a Machine whose deletion finished: applying or patching it finds nothing. */
const GONE_MACHINE_ITEMS: readonly { prefix: RegExp; item: RegExp; separator: RegExp }[] = [
  // MachinePool Machines: core patches the UpToDate condition of every Machine in its cache. The
  // NotFound names the kind or the resource, depending on where the client built the error.
  {
    prefix: /^failed to set machines up to date: /,
    item: /^failed to patch Machine \S+: failed to patch status conditions: (Machine\.cluster\.x-k8s\.io|machines\.cluster\.x-k8s\.io) "[^"]+" not found$/,
    separator: /, (?=failed to patch Machine )/,
  },
  // MachinePool Machines: core applies every Machine it finds for an InfraMachine in its cache with
  // the uid it last saw, and the API server finds no object under that name any more.
  {
    prefix:
      /^failed to reconcile infrastructure: failed to reconcile Machines for MachinePool \S+: failed to create machines for MachinePool "[^"]+" in namespace "[^"]+": /,
    item: /^failed to update Machine "[^"]+": failed to apply Machine: Operation cannot be fulfilled on machines\.cluster\.x-k8s\.io "[^"]+": uid mismatch: the provided object specified uid [0-9a-f-]+, and no existing object was found$/,
    separator: /, (?=failed to update Machine )/,
  },
];

/**
 * Core's topology controller reads the Node of every `status.nodeRefs` entry of a MachinePool to tell
 * whether it is upgrading (`IsMachinePoolUpgrading`); during a rollout a replaced instance's Node is
 * deleted a reconcile before core's MachinePool controller drops it from `nodeRefs`.
 */
const GONE_NODE_OF_UPGRADING_POOL =
  /^error computing the desired state of the Cluster topology: failed to check if any MachinePool is upgrading: failed to list upgrading MachinePools: failed to check if MachinePool \S+ is upgrading: failed to get Node \S+$/;

const TRANSIENT_SUBSTRINGS: readonly string[] = [
  "connection to the workload cluster is down",
  "the object has been modified",
  // Its cache has not seen a Cluster the suite created a moment before the pool.
  'Cluster.cluster.x-k8s.io "conformance',
];

/** Whether one reconcile error real core logged is a transient of a healthy cluster. */
export function isTransientCoreError(error: string): boolean {
  // Core's reconcile aggregates the errors of its phases ("[a, b]"): transient when each one is.
  const phases = /^\[(failed to .*)\]$/.exec(error);
  if (phases?.[1]) {
    const parts = phases[1].split(
      /, (?=failed to (?:reconcile infrastructure|set machines up to date): )/,
    );
    if (parts.length > 1) return parts.every((part) => isTransientCoreError(part));
  }
  if (TRANSIENT_SUBSTRINGS.some((text) => error.includes(text))) return true;
  if (GONE_NODE_OF_UPGRADING_POOL.test(error)) return true;
  return GONE_MACHINE_ITEMS.some(({ prefix, item, separator }) => {
    const match = prefix.exec(error);
    if (!match) return false;
    // Several Machines at once come as one aggregate: "[a, b]".
    const list = error.slice(match[0].length).replace(/^\[(.*)\]$/, "$1");
    return list.split(separator).every((entry) => item.test(entry));
  });
}
