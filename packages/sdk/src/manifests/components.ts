import { dump } from "js-yaml";
import { Labels } from "../contract/constants.js";
import type { Manifest } from "../crd/manifest.js";
import { CONVERSION_WEBHOOK_PATH } from "../webhook/conversion.js";
import { webhookPath } from "../webhook/handlers.js";
import { DEFAULT_WEBHOOK_CERT_DIR } from "../webhook/server-options.js";
import type {
  AutoscalerRoleOptions,
  ComponentKind,
  ComponentsOptions,
} from "./components-options.js";
import {
  autoscalerPermissions,
  kitPermissions,
  leaderElectionRules,
  mergeRules,
} from "./permissions.js";

const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "MutatingWebhookConfiguration",
  "ValidatingWebhookConfiguration",
  "PriorityClass",
  "StorageClass",
]);

/** The manager's secret-backed and extra volumes, checked. */
function podVolumes(
  options: ComponentsOptions,
  prefix: string,
  webhooks: boolean,
): {
  volumes: Array<Record<string, unknown>>;
  mounts: Array<Record<string, unknown>>;
  env: Array<Record<string, unknown>>;
} {
  const volumes: Array<Record<string, unknown>> = [];
  const mounts: Array<Record<string, unknown>> = [];
  const env: Array<Record<string, unknown>> = [];
  const names = new Set<string>(webhooks ? ["cert"] : []);
  const paths = new Set<string>(webhooks ? [DEFAULT_WEBHOOK_CERT_DIR] : []);
  const claim = (what: string, name: string, mountPath: string | undefined) => {
    if (!DNS_LABEL.test(name) || name.length > 63) {
      throw new TypeError(
        `${what} name ${JSON.stringify(name.slice(0, 70))} must be a DNS label (lower-case letters, digits and dashes), e.g. "credentials"`,
      );
    }
    if (names.has(name)) {
      throw new TypeError(
        `${what} name "${name}" is used twice${name === "cert" ? " (cert is the webhook certificate's volume)" : ""}; give each its own`,
      );
    }
    names.add(name);
    if (mountPath === undefined) return;
    if (!mountPath.startsWith("/")) {
      throw new TypeError(
        `${what} "${name}": mountPath ${JSON.stringify(mountPath.slice(0, 100))} must be an absolute path, e.g. "/home/.foo"`,
      );
    }
    if (paths.has(mountPath)) {
      throw new TypeError(
        `${what} "${name}": mountPath ${mountPath} is already mounted; pick another`,
      );
    }
    paths.add(mountPath);
  };
  for (const secret of options.secrets ?? []) {
    claim("secrets[]", secret.name, secret.mountPath);
    if (Object.keys(secret.data).length === 0) {
      throw new TypeError(
        `secrets[] "${secret.name}" has no data; give at least one key, e.g. { credentials: "\${FOO_B64ENCODED_CREDENTIALS}" }`,
      );
    }
    const secretName = `${prefix}-${secret.name}`;
    if (secret.mountPath !== undefined) {
      volumes.push({ name: secret.name, secret: { secretName } });
      mounts.push({ name: secret.name, mountPath: secret.mountPath, readOnly: true });
    }
    for (const variable of secret.env ?? []) {
      if (!Object.hasOwn(secret.data, variable.key)) {
        throw new TypeError(
          `secrets[] "${secret.name}": env ${variable.name} reads key "${variable.key}", which its data lacks (keys: ${Object.keys(secret.data).join(", ")})`,
        );
      }
      env.push({
        name: variable.name,
        valueFrom: { secretKeyRef: { name: secretName, key: variable.key } },
      });
    }
  }
  for (const volume of options.volumes ?? []) {
    claim("volumes[]", volume.name, volume.mountPath);
    volumes.push({ name: volume.name, ...structuredClone(volume.source) });
    mounts.push({
      name: volume.name,
      mountPath: volume.mountPath,
      readOnly: volume.readOnly ?? true,
    });
  }
  return { volumes, mounts, env };
}

const NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The ClusterRole (and its binding) of {@link ComponentsOptions.autoscalerRole}. */
function autoscalerRole(
  option: true | AutoscalerRoleOptions,
  kinds: readonly ComponentKind[],
  prefix: string,
): Manifest[] {
  const { name = `${prefix}-cluster-autoscaler`, serviceAccount } = option === true ? {} : option;
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    throw new TypeError(
      `autoscalerRole.name ${JSON.stringify(name.slice(0, 60))} must be a DNS subdomain (lower-case letters, digits, dashes and dots), e.g. "foo-provider-cluster-autoscaler"`,
    );
  }
  const role: Manifest = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name },
    rules: mergeRules(kinds.flatMap((kind) => autoscalerPermissions(kind))),
  };
  if (!serviceAccount) return [role];
  for (const [field, value, pattern] of [
    ["namespace", serviceAccount.namespace, DNS_LABEL],
    ["name", serviceAccount.name, DNS_SUBDOMAIN],
  ] as const) {
    if (typeof value !== "string" || value.length > 253 || !pattern.test(value)) {
      throw new TypeError(
        `autoscalerRole.serviceAccount.${field} ${JSON.stringify(String(value).slice(0, 60))} is not a valid ${field}; give the cluster-autoscaler's ServiceAccount, e.g. { namespace: "kube-system", name: "cluster-autoscaler" }`,
      );
    }
  }
  return [
    role,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [
        { kind: "ServiceAccount", name: serviceAccount.name, namespace: serviceAccount.namespace },
      ],
    },
  ];
}

/**
 * Renders what a provider ships for `clusterctl init --infrastructure <name>`, as one list of objects:
 * the namespace, the CRDs (kind and template), the ClusterRole core's manager aggregates (R3), the
 * manager's ServiceAccount, least-privilege ClusterRole ({@link kitPermissions} + `extraRules`) and
 * leader-election Role, the Deployment (non-root, read-only root filesystem, probes on `:9440`, metrics on
 * `:8443` over HTTPS behind TokenReview/SubjectAccessReview, `--leader-elect`, `--watch-filter`, `--namespace`), the webhook Service, the cert-manager
 * Issuer and Certificate, the webhook configurations (CA injected by cert-manager), and with
 * `autoscalerRole` the cluster-autoscaler's read access to the pools (scale from zero). Every object
 * carries `cluster.x-k8s.io/provider: infrastructure-<name>`. Write it with {@link componentsYAML}.
 *
 * @example
 * ```ts
 * const objects = renderComponents({ name: "foo", kinds: [FooMachinePool], image: "ghcr.io/acme/foo:v0.1.0" });
 * await writeFile("out/infrastructure-components.yaml", componentsYAML(objects));
 * ```
 */
export function renderComponents(options: ComponentsOptions): Manifest[] {
  if (!NAME.test(options.name)) {
    throw new TypeError(
      `provider name "${options.name}" must be lower-case letters, digits and dashes, starting with a letter (e.g. "foo")`,
    );
  }
  if (options.kinds.length === 0) throw new TypeError("renderComponents needs at least one kind");
  const prefix = options.prefix ?? `${options.name}-provider`;
  const namespace = `${prefix}-system`;
  const vars = options.variablePrefix ?? options.name.toUpperCase().replaceAll("-", "_");
  const providerLabel = { [Labels.ProviderName]: `infrastructure-${options.name}` };
  const selector = {
    "cluster.x-k8s.io/provider": `infrastructure-${options.name}`,
    "control-plane": "controller-manager",
  };
  const manager = `${prefix}-controller-manager`;
  const serviceName = `${prefix}-webhook-service`;
  const certificate = `${prefix}-serving-cert`;
  const certSecret = `${prefix}-webhook-service-cert`;
  const validating = options.validating ?? true;
  const defaulting = options.defaulting ?? false;
  // A kind with several schemas needs the conversion webhook, so the webhook Service and certificate too.
  const converting = options.kinds.some((kind) => kind.conversion !== undefined);
  const webhooks = validating || defaulting || converting;
  const extra = podVolumes(options, prefix, webhooks);

  const objects: Manifest[] = [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: namespace, labels: { "control-plane": "controller-manager" } },
    },
  ];
  for (const kind of options.kinds) {
    for (const crd of [kind.crd, kind.templateCrd, ...(kind.machine ? [kind.machine.crd] : [])])
      objects.push(withConversionWebhook(structuredClone(crd)));
    objects.push(structuredClone(kind.clusterRole));
  }
  const rules = mergeRules([
    ...options.kinds.flatMap((kind) => kitPermissions(kind, options.kit)),
    ...(options.extraRules ?? []),
  ]);
  objects.push(
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: manager, namespace } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: `${prefix}-manager-role` },
      rules,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${prefix}-manager-rolebinding` },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: `${prefix}-manager-role`,
      },
      subjects: [{ kind: "ServiceAccount", name: manager, namespace }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: `${prefix}-leader-election-role`, namespace },
      rules: leaderElectionRules(),
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${prefix}-leader-election-rolebinding`, namespace },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "Role",
        name: `${prefix}-leader-election-role`,
      },
      subjects: [{ kind: "ServiceAccount", name: manager, namespace }],
    },
    ...(options.secrets ?? []).map(
      (secret): Manifest => ({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: `${prefix}-${secret.name}`, namespace },
        type: "Opaque",
        data: { ...secret.data },
      }),
    ),
    deployment(),
  );
  if (options.autoscalerRole) {
    objects.push(...autoscalerRole(options.autoscalerRole, options.kinds, prefix));
  }
  if (webhooks) {
    objects.push(
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: serviceName, namespace },
        spec: { ports: [{ port: 443, targetPort: "webhook-server" }], selector },
      },
      {
        apiVersion: "cert-manager.io/v1",
        kind: "Issuer",
        metadata: { name: `${prefix}-selfsigned-issuer`, namespace },
        spec: { selfSigned: {} },
      },
      {
        apiVersion: "cert-manager.io/v1",
        kind: "Certificate",
        metadata: { name: certificate, namespace },
        spec: {
          dnsNames: [
            `${serviceName}.${namespace}.svc`,
            `${serviceName}.${namespace}.svc.cluster.local`,
          ],
          issuerRef: { kind: "Issuer", name: `${prefix}-selfsigned-issuer` },
          secretName: certSecret,
          subject: { organizations: ["k8s-sig-cluster-lifecycle"] },
        },
      },
    );
    if (defaulting) objects.push(webhookConfiguration("mutate"));
    if (validating) objects.push(webhookConfiguration("validate"));
  }
  for (const given of options.extraObjects ?? []) {
    const object = structuredClone(given);
    if (typeof object.kind !== "string" || typeof object.metadata?.name !== "string") {
      throw new TypeError(
        `extraObjects: every object needs a kind and metadata.name (got kind ${JSON.stringify(object.kind)}, name ${JSON.stringify(object.metadata?.name)})`,
      );
    }
    if (object.metadata.namespace === undefined && !CLUSTER_SCOPED.has(object.kind)) {
      object.metadata.namespace = namespace;
    }
    objects.push(object);
  }
  for (const object of objects) {
    object.metadata.labels = { ...object.metadata.labels, ...providerLabel };
  }
  return objects;

  /** Points a CRD's conversion webhook at the provider's Service; cert-manager injects the CA. */
  function withConversionWebhook(crd: Manifest): Manifest {
    const spec = crd.spec as {
      conversion?: { strategy?: string; webhook?: Record<string, unknown> };
    };
    if (spec.conversion?.strategy !== "Webhook") return crd;
    spec.conversion.webhook = {
      ...spec.conversion.webhook,
      clientConfig: {
        service: { name: serviceName, namespace, path: CONVERSION_WEBHOOK_PATH },
      },
    };
    crd.metadata.annotations = {
      ...crd.metadata.annotations,
      "cert-manager.io/inject-ca-from": `${namespace}/${certificate}`,
    };
    return crd;
  }

  function webhookConfiguration(type: "mutate" | "validate"): Manifest {
    const mutating = type === "mutate";
    return {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
      metadata: {
        name: `${prefix}-${mutating ? "mutating" : "validating"}-webhook-configuration`,
        annotations: { "cert-manager.io/inject-ca-from": `${namespace}/${certificate}` },
      },
      webhooks: options.kinds.flatMap((kind) =>
        [
          [kind.kind, kind.plural],
          [kind.templateKind, kind.templateResource.plural],
        ].map(([kindName, plural]) => ({
          name: `${mutating ? "default" : "validation"}.${(kindName as string).toLowerCase()}.${kind.group}`,
          admissionReviewVersions: ["v1"],
          clientConfig: {
            service: {
              name: serviceName,
              namespace,
              path: webhookPath(type, kind.group, kind.storageVersion, kindName as string),
            },
          },
          failurePolicy: "Fail",
          matchPolicy: "Equivalent",
          rules: [
            {
              apiGroups: [kind.group],
              apiVersions: [kind.storageVersion],
              operations: ["CREATE", "UPDATE"],
              resources: [plural as string],
            },
          ],
          sideEffects: "None",
          timeoutSeconds: 10,
        })),
      ),
    };
  }

  function deployment(): Manifest {
    const volumeMounts = [
      ...(webhooks ? [{ name: "cert", mountPath: DEFAULT_WEBHOOK_CERT_DIR, readOnly: true }] : []),
      ...extra.mounts,
    ];
    return {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: manager, namespace, labels: { "control-plane": "controller-manager" } },
      spec: {
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: selector },
          spec: {
            serviceAccountName: manager,
            terminationGracePeriodSeconds: 10,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "manager",
                image: options.image,
                imagePullPolicy: "IfNotPresent",
                args: [
                  "--leader-elect",
                  `--leader-election-id=${prefix}-leader-election`,
                  "--diagnostics-address=:8443",
                  "--health-probe-bind-address=:9440",
                  // No --watch-filter / --namespace knob: clusterctl counts a variable with an empty
                  // default (`${X:=}`) as unset and refuses to install the release without it.
                  `--log-level=\${${vars}_LOG_LEVEL:=info}`,
                  ...(webhooks
                    ? ["--webhook-port=9443", `--webhook-cert-dir=${DEFAULT_WEBHOOK_CERT_DIR}`]
                    : []),
                  ...(options.args ?? []),
                ],
                env: [
                  {
                    name: "POD_NAMESPACE",
                    valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
                  },
                  { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                  ...(options.env ?? []).map((variable) => structuredClone(variable)),
                  ...extra.env,
                ],
                ports: [
                  ...(webhooks
                    ? [{ containerPort: 9443, name: "webhook-server", protocol: "TCP" }]
                    : []),
                  { containerPort: 9440, name: "healthz", protocol: "TCP" },
                  { containerPort: 8443, name: "metrics", protocol: "TCP" },
                ],
                livenessProbe: { httpGet: { path: "/healthz", port: "healthz" } },
                readinessProbe: { httpGet: { path: "/readyz", port: "healthz" } },
                resources: {
                  requests: { cpu: "50m", memory: "128Mi" },
                  limits: { memory: "512Mi" },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { drop: ["ALL"] },
                  privileged: false,
                  readOnlyRootFilesystem: true,
                  runAsUser: 65532,
                  runAsGroup: 65532,
                },
                terminationMessagePolicy: "FallbackToLogsOnError",
                volumeMounts,
              },
            ],
            tolerations: [{ effect: "NoSchedule", key: "node-role.kubernetes.io/control-plane" }],
            volumes: [
              ...(webhooks ? [{ name: "cert", secret: { secretName: certSecret } }] : []),
              ...extra.volumes,
            ],
          },
        },
      },
    };
  }
}

/** The objects as one multi-document YAML stream (`infrastructure-components.yaml`). */
export function componentsYAML(objects: readonly Manifest[]): string {
  return objects.map((object) => `---\n${dump(object, { lineWidth: -1, noRefs: true })}`).join("");
}

/** One release series of `metadata.yaml`: `major.minor` of the provider and the contract it follows. */
export interface ReleaseSeries {
  /** Provider major version. */
  major: number;
  /** Provider minor version. */
  minor: number;
  /** CAPI contract, e.g. `v1beta2`. */
  contract: string;
}

/**
 * clusterctl's `metadata.yaml`: which provider release series follows which CAPI contract (R21; the
 * contract must match the CRDs' `cluster.x-k8s.io/<contract>` labels).
 *
 * @example
 * ```ts
 * metadataYAML([{ major: 0, minor: 1, contract: "v1beta2" }]);
 * ```
 */
export function metadataYAML(series: readonly ReleaseSeries[]): string {
  return `# clusterctl provider metadata: which release series follows which Cluster API contract.\n${dump(
    {
      apiVersion: "clusterctl.cluster.x-k8s.io/v1alpha3",
      kind: "Metadata",
      releaseSeries: series.map(({ major, minor, contract }) => ({ major, minor, contract })),
    },
  )}`;
}
