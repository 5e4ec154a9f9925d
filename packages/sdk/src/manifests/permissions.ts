import type { InfraMachinePoolDefinition } from "../crd/definition.js";

/** One RBAC policy rule. */
export interface PolicyRule {
  /** API groups (`""` is core). */
  apiGroups: string[];
  /** Resources (plural, `x/status` for a subresource). */
  resources: string[];
  /** Verbs. */
  verbs: string[];
}

/** What the kit's controller touches besides the provider's own calls. */
export interface KitPermissionOptions {
  /**
   * Read the management cluster's Nodes. Default false: the kit reads Nodes of each workload cluster
   * (`readiness: "node"`) with the credentials of its `<cluster>-kubeconfig` Secret, not with this role.
   */
  nodes?: boolean;
  /**
   * API groups of the control plane kinds a Cluster may reference (`spec.controlPlaneRef`), which
   * the preflight checks read. Default `["controlplane.cluster.x-k8s.io"]` (kubeadm's, EKS's, the
   * hosted control planes'); add the group of any other (e.g. `infrastructure.cluster.x-k8s.io` for
   * AKS's). Without `get` on it, launches wait with `PreflightCheckFailed` naming the refusal.
   */
  controlPlaneGroups?: readonly string[];
}

/**
 * The RBAC the provider kit (`machinePoolController`) needs for one InfraMachinePool kind, verb by verb
 * from what it does: it watches its pools (updates `spec.providerIDList` and finalizers, patches
 * status), reads templates, watches MachinePools (and writes `spec.replicas` under an external
 * autoscaler), watches Clusters, reads bootstrap and kubeconfig Secrets, records
 * Events, and holds a Lease for leader election (namespaced; see {@link leaderElectionRules}). With
 * MachinePool Machines (`definition.machine`) it also writes the InfraMachine kind and deletes
 * Machines.
 *
 * @example
 * ```ts
 * const rules = kitPermissions(FooMachinePool);
 * ```
 */
export function kitPermissions(
  definition: Pick<
    InfraMachinePoolDefinition<never, never>,
    "group" | "plural" | "templateResource"
  > &
    Partial<Pick<InfraMachinePoolDefinition<never, never>, "machine" | "versions">>,
  options: KitPermissionOptions = {},
): PolicyRule[] {
  const { group, plural } = definition;
  const rules: PolicyRule[] = [
    {
      apiGroups: [group],
      resources: [plural],
      verbs: ["get", "list", "watch", "update", "patch"],
    },
    { apiGroups: [group], resources: [`${plural}/status`], verbs: ["get", "update", "patch"] },
    // Setting blockOwnerDeletion on owned objects needs update on /finalizers (OwnerReferencesPermissionEnforcement).
    { apiGroups: [group], resources: [`${plural}/finalizers`], verbs: ["update"] },
    {
      apiGroups: [group],
      resources: [definition.templateResource.plural],
      verbs: ["get", "list", "watch"],
    },
    { apiGroups: ["cluster.x-k8s.io"], resources: ["clusters"], verbs: ["get", "list", "watch"] },
    {
      apiGroups: ["cluster.x-k8s.io"],
      resources: ["machinepools"],
      verbs: ["get", "list", "watch", "update", "patch"],
    },
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch", "update"] },
    // Preflight checks: the Cluster's control plane object, found through its CRD's contract label.
    {
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      verbs: ["get"],
    },
    ...(options.controlPlaneGroups ?? ["controlplane.cluster.x-k8s.io"]).map((apiGroup) => ({
      apiGroups: [apiGroup],
      resources: ["*"],
      verbs: ["get"],
    })),
    // The diagnostics endpoint authenticates and authorises its callers through the API server.
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
    { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
  ];
  const machine = definition.machine;
  if (machine) {
    // MachinePool Machines: the kit creates, updates and deletes one InfraMachine per instance and
    // deletes Machines (core drains their Nodes); it reads Machines to know which instance is whose,
    // and, as their owner, writes the OwnerRemediated condition a MachineHealthCheck hands it.
    rules.push(
      {
        apiGroups: [group],
        resources: [machine.plural],
        verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
      },
      {
        apiGroups: [group],
        resources: [`${machine.plural}/status`],
        verbs: ["get", "patch", "update"],
      },
      {
        apiGroups: ["cluster.x-k8s.io"],
        resources: ["machines"],
        verbs: ["delete", "get", "list", "watch"],
      },
      {
        apiGroups: ["cluster.x-k8s.io"],
        resources: ["machines/status"],
        verbs: ["get", "patch"],
      },
    );
  }
  if ((definition.versions?.length ?? 1) > 1) {
    // The storage version migration (`storageVersionMigrator`): it watches the kind's CRDs, rewrites
    // every object at the storage version (pools through /status, templates directly) and trims the
    // CRD's status.storedVersions.
    rules.push(
      {
        apiGroups: ["apiextensions.k8s.io"],
        resources: ["customresourcedefinitions"],
        verbs: ["list", "watch", "patch"],
      },
      {
        apiGroups: ["apiextensions.k8s.io"],
        resources: ["customresourcedefinitions/status"],
        verbs: ["patch"],
      },
      {
        apiGroups: [group],
        resources: [definition.templateResource.plural],
        verbs: ["patch"],
      },
    );
  }
  if (options.nodes ?? false) {
    rules.push({ apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] });
  }
  return rules;
}

/**
 * What the cluster-autoscaler's clusterapi provider reads of a provider to scale a MachinePool from
 * zero: the InfraMachinePool its `spec.template.spec.infrastructureRef` names, for `status.capacity`
 * and `status.nodeInfo` — through an informer, so get, list and watch, in every namespace. It reads
 * nothing else of the provider: not the `<Kind>Template` (ClusterClass's, never a MachinePool's
 * reference) nor the InfraMachines. The rules on core's kinds (MachinePools and their scale
 * subresource, Machines) come with the autoscaler's own deployment.
 *
 * @example
 * ```ts
 * autoscalerPermissions(FooMachinePool);
 * // [{ apiGroups: ["infrastructure.foo.com"], resources: ["foomachinepools"], verbs: ["get", "list", "watch"] }]
 * ```
 */
export function autoscalerPermissions(
  definition: Pick<InfraMachinePoolDefinition<never, never>, "group" | "plural">,
): PolicyRule[] {
  return [
    {
      apiGroups: [definition.group],
      resources: [definition.plural],
      verbs: ["get", "list", "watch"],
    },
  ];
}

/** The namespaced rules of leader election (the Lease) and its Events. */
export function leaderElectionRules(): PolicyRule[] {
  return [
    {
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
  ];
}

/**
 * Merges rules that share API groups and resources (verbs united, sorted) so the rendered role reads
 * like a hand-written one.
 */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const merged = new Map<string, PolicyRule>();
  for (const rule of rules) {
    const key = `${[...rule.apiGroups].sort().join(",")}|${[...rule.resources].sort().join(",")}`;
    const existing = merged.get(key);
    if (existing) existing.verbs = [...new Set([...existing.verbs, ...rule.verbs])].sort();
    else
      merged.set(key, {
        apiGroups: [...rule.apiGroups].sort(),
        resources: [...rule.resources].sort(),
        verbs: [...new Set(rule.verbs)].sort(),
      });
  }
  return [...merged.values()].sort((a, b) =>
    `${a.apiGroups[0]}/${a.resources[0]}`.localeCompare(`${b.apiGroups[0]}/${b.resources[0]}`),
  );
}
