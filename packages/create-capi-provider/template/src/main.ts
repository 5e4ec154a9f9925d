/**
 * The provider's production entry point: standard flags (`--help`), leader election, metrics on
 * :8443 (HTTPS, TokenReview/SubjectAccessReview), health probes on :9440, the webhook server on :9443, graceful shutdown on SIGTERM/SIGINT.
 * `--help` prints the flags and exits 0; exits non-zero with the reason when a flag is wrong or the manager cannot start (e.g. a missing
 * webhook certificate file).
 */
import {
  HelpRequested,
  Manager,
  machinePoolController,
  managerFlagsCommand,
  managerOptionsFromFlags,
  parseManagerFlags,
} from "@capi-ts/sdk";
import {
  CONVERSION_WEBHOOK_PATH,
  conversionWebhook,
  infraMachinePoolWebhooks,
  WebhookServer,
} from "@capi-ts/sdk/webhook";
import type { CloudClient, CloudCredentials } from "./cloud.js";
import { FooCluster } from "./cluster.js";
import { fooCredentials, parseNamespaceList } from "./credentials.js";
import { fooDriver } from "./driver.js";
import { FooMachinePool, validateFooMachinePoolSpec } from "./kind.js";

const NAME = "foo-provider";

/**
 * TODO: build the real cloud client from a pool's credentials (the kit reads them from the Secret
 * its Cluster names, or the default one below, and redacts their values from every log line,
 * condition and Event).
 */
function connectCloud(credentials: CloudCredentials): CloudClient {
  throw new Error(
    `connectCloud() is not written yet: create your cloud SDK client for ${credentials.endpoint} in src/main.ts`,
  );
}

/**
 * Pools whose Cluster names no identity of its own use this Secret (keys endpoint and token), in the
 * namespaces of --default-credentials-namespaces only (none by default, as CAPA's allowedNamespaces).
 */
const DEFAULT_CREDENTIALS = {
  namespace: process.env.POD_NAMESPACE ?? "foo-provider-system",
  name: "foo-provider-credentials",
};

async function main(): Promise<void> {
  const command = managerFlagsCommand(NAME).option(
    "--default-credentials-namespaces <list>",
    "comma-separated namespaces whose pools may use the default credentials when their Cluster names no identity ('*': every namespace); default none",
    process.env.DEFAULT_CREDENTIALS_NAMESPACES ?? "",
  );
  const flags = parseManagerFlags(process.argv.slice(2), command);
  const { defaultCredentialsNamespaces } = command.opts<{ defaultCredentialsNamespaces: string }>();
  const manager = new Manager({
    ...managerOptionsFromFlags(flags),
    name: NAME,
    processMetrics: true,
  });
  machinePoolController(fooDriver(), {
    manager,
    kind: FooMachinePool,
    // Each Cluster's FooCluster names its identity (spec.identityRef.name), as CAPA's AWSCluster does.
    infrastructureCluster: FooCluster,
    credentials: fooCredentials({
      connect: connectCloud,
      defaultSecret: DEFAULT_CREDENTIALS,
      defaultCredentialsNamespaces: parseNamespaceList(defaultCredentialsNamespaces),
    }),
  });
  manager.add(
    new WebhookServer({
      port: flags.webhookPort,
      certDir: flags.webhookCertDir,
      logger: manager.logger,
    })
      .register(infraMachinePoolWebhooks(FooMachinePool, { validate: validateFooMachinePoolSpec }))
      // Converts between API versions once the kind has spokes (see "Changing your API").
      .register(CONVERSION_WEBHOOK_PATH, conversionWebhook([FooMachinePool])),
  );
  await manager.start();
}

main().catch((error: unknown) => {
  if (error instanceof HelpRequested) {
    console.log(error.usage);
    process.exit(0);
  }
  console.error(`${NAME}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
