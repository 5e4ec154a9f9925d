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
import type { CloudClient } from "./cloud.js";
import { fooDriver } from "./driver.js";
import { FooMachinePool, validateFooMachinePoolSpec } from "./kind.js";

const NAME = "foo-provider";

/**
 * TODO: build the real cloud client. The release mounts the credentials Secret (src/manifests.ts) at
 * /home/.foo/credentials; read it here and pass every secret value to registerSecret() so that it never
 * shows up in a log line, condition or Event.
 */
function connectCloud(): CloudClient {
  throw new Error("connectCloud() is not written yet: create your cloud SDK client in src/main.ts");
}

async function main(): Promise<void> {
  const flags = parseManagerFlags(process.argv.slice(2), managerFlagsCommand(NAME));
  const manager = new Manager({
    ...managerOptionsFromFlags(flags),
    name: NAME,
    processMetrics: true,
  });
  machinePoolController(fooDriver(connectCloud()), { manager, kind: FooMachinePool });
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
