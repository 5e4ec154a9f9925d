/**
 * The `crd` scenario: what a provider's kind definition must hold before any pool exists — a
 * namespaced CRD named and labelled by the contract, serving the versions its label lists with the
 * status subresource, object metadata and list-map conditions, its template kind, and a ClusterRole
 * aggregated into core's manager that covers the kind.
 *
 * @module
 */
import { calculateCRDName, Labels } from "@capi-ts/sdk/contract";
import type { KubernetesObject } from "@kubernetes/client-node";
import { crdVersionProblem } from "./crd-versions.js";
import { ConformanceError } from "./invariants.js";
import type { MachinePoolConformanceOptions } from "./types.js";

/** The part of an OpenAPI schema the CRD checks read. */
interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
}

/**
 * Throws a {@link ConformanceError} naming the first check the kind's CRD, template CRD or
 * ClusterRole fails (`crd.namespaced`, `crd.name`, `crd.contractLabel`, `rbac.aggregatedClusterRole`, …).
 */
export function checkKindDefinition(kind: MachinePoolConformanceOptions["kind"]): void {
  const crd = kind.crd as unknown as KubernetesObject & {
    spec?: {
      group?: string;
      scope?: string;
      names?: { kind?: string; listKind?: string; plural?: string };
      versions?: { name: string; served?: boolean; subresources?: { status?: unknown } }[];
    };
  };
  const fail = (check: string, message: string) => {
    throw new ConformanceError(check, message);
  };
  if (crd.spec?.scope !== "Namespaced")
    fail("crd.namespaced", `the CRD must be Namespaced: got ${crd.spec?.scope}`);
  const expected = calculateCRDName(kind.group, kind.kind);
  if (crd.metadata?.name !== expected)
    fail("crd.name", `the CRD must be named ${expected}: got ${crd.metadata?.name}`);
  if (crd.spec?.names?.kind !== kind.kind || crd.spec?.names?.listKind !== `${kind.kind}List`) {
    fail(
      "crd.names",
      `names must be ${kind.kind}/${kind.kind}List: got ${JSON.stringify(crd.spec?.names)}`,
    );
  }
  const label =
    crd.metadata?.labels?.["cluster.x-k8s.io/v1beta2"] ??
    crd.metadata?.labels?.["cluster.x-k8s.io/v1beta1"];
  if (!label)
    fail(
      "crd.contractLabel",
      "the CRD needs the label cluster.x-k8s.io/v1beta2: <versions joined by _>",
    );
  const served = new Set(
    (crd.spec?.versions ?? []).filter((v) => v.served !== false).map((v) => v.name),
  );
  for (const v of (label ?? "").split("_")) {
    if (!served.has(v))
      fail("crd.contractLabel", `the contract label lists ${v}, which the CRD does not serve`);
  }
  for (const v of crd.spec?.versions ?? []) {
    if (!v.subresources?.status)
      fail("crd.statusSubresource", `version ${v.name} must have the status subresource`);
  }
  for (const v of crd.spec?.versions ?? []) {
    const root = (v as { schema?: { openAPIV3Schema?: SchemaNode } }).schema?.openAPIV3Schema;
    const props = root?.properties ?? {};
    if (
      props.apiVersion?.type !== "string" ||
      props.kind?.type !== "string" ||
      props.metadata?.type !== "object"
    ) {
      fail(
        "crd.objectMeta",
        `version ${v.name} must declare apiVersion and kind (string) and metadata (object)`,
      );
    }
    const conditions = props.status?.properties?.conditions;
    if (
      conditions &&
      (conditions["x-kubernetes-list-type"] !== "map" ||
        JSON.stringify(conditions["x-kubernetes-list-map-keys"]) !== '["type"]')
    ) {
      fail(
        "conditions.schema",
        `version ${v.name}: status.conditions must be a list-map keyed by type`,
      );
    }
  }
  for (const definition of [kind.crd, kind.templateCrd]) {
    const problem = definition ? crdVersionProblem(definition) : undefined;
    if (problem) fail(problem.check, problem.message);
  }
  if (kind.templateCrd) {
    const names = (kind.templateCrd as { spec?: { names?: { kind?: string } } }).spec?.names;
    if (names?.kind !== `${kind.kind}Template`) {
      fail("crd.template", `the template CRD must serve ${kind.kind}Template: got ${names?.kind}`);
    }
  }
  if (kind.clusterRole) {
    const role = kind.clusterRole as unknown as KubernetesObject & {
      rules?: { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[];
    };
    if (role.metadata?.labels?.[Labels.AggregateToManager] !== "true") {
      fail(
        "rbac.aggregatedClusterRole",
        `the ClusterRole needs the label ${Labels.AggregateToManager}: "true"`,
      );
    }
    const covers = (role.rules ?? []).some(
      (r) => r.apiGroups?.includes(kind.group) && r.resources?.includes(kind.plural),
    );
    if (!covers)
      fail(
        "rbac.aggregatedClusterRole",
        `the ClusterRole must grant core access to ${kind.plural}.${kind.group}`,
      );
  }
}
