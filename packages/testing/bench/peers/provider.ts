// The "provider" peer of `./dev bench peers`: the Gadget controller in the shape of a scaffolded
// provider, run the way its image runs it. Its imports are those of the scaffold's src/main.ts and
// src/kind.ts (the SDK's root entry, `/crd` and `/webhook`, zod for the kind's spec). The harness
// builds it with the scaffold's own tsup config from the built packages (tsc's emit, unbundled,
// under --provider-build tsc) and runs it with the ENV lines of the scaffold's Dockerfile. As
// main.ts does, it takes the standard manager flags, loads its kubeconfig through
// managerOptionsFromFlags, serves metrics, health probes and the kind's webhooks, and exports
// process metrics. Only the reconciler differs: it is the Gadget reconciler every peer runs, so the
// ratios compare runtimes.

import {
  HelpRequested,
  Manager,
  managerFlagsCommand,
  managerOptionsFromFlags,
  parseManagerFlags,
} from "@capi-ts/sdk";
import { defineInfraMachinePool, machinePoolStrategySchema } from "@capi-ts/sdk/crd";
import {
  CONVERSION_WEBHOOK_PATH,
  conversionWebhook,
  infraMachinePoolWebhooks,
  WebhookServer,
} from "@capi-ts/sdk/webhook";
import * as z from "zod";
import {
  GADGET_GROUP,
  GADGET_PLURAL,
  GADGET_VERSION,
  type Gadget,
  reconcileCounter,
  reportBootHeap,
} from "./gadget.js";

// kind.ts of the scaffold, as generated.
const FooMachinePoolSpecSchema = z.object({
  instanceType: z.string().min(1),
  minSize: z.number().int().min(0),
  maxSize: z.number().int().min(0),
  zones: z.array(z.string().min(1)).optional(),
  strategy: machinePoolStrategySchema.optional(),
});
const FooMachinePool = defineInfraMachinePool({
  group: "infrastructure.foo.example.com",
  kind: "FooMachinePool",
  versions: ["v1beta2"],
  spec: FooMachinePoolSpecSchema,
  description: "A pool of foo instances managed as one scaling group.",
  machinePoolMachines: false,
});

const GadgetResource = {
  group: GADGET_GROUP,
  version: GADGET_VERSION,
  kind: "Gadget",
  plural: GADGET_PLURAL,
  scope: "Namespaced",
  subresources: { status: true },
} as const;

async function main(): Promise<void> {
  const command = managerFlagsCommand("gadget-provider").option(
    "--expect <n>",
    "report idle after this many reconciles",
    "0",
  );
  const flags = parseManagerFlags(process.argv.slice(2), command);
  const counted = reconcileCounter(Number(command.opts<{ expect: string }>().expect));
  reportBootHeap();
  const manager = new Manager({
    ...managerOptionsFromFlags(flags),
    name: "gadget-provider",
    processMetrics: true,
  });
  manager
    .controller("gadgets")
    .for<Gadget & { metadata: object }>(GadgetResource)
    .complete(async (request, { cache, client }) => {
      counted();
      const gadget = await cache.get<Gadget & { metadata: object }>(GadgetResource, request);
      if (!gadget || gadget.status?.observedSize === gadget.spec.size) return;
      await client.mergePatchStatus(GadgetResource, gadget, {
        status: { observedSize: gadget.spec.size },
      });
    });
  manager.add(
    new WebhookServer({
      port: flags.webhookPort,
      certDir: flags.webhookCertDir,
      logger: manager.logger,
    })
      .register(infraMachinePoolWebhooks(FooMachinePool, { validate: () => [] }))
      .register(CONVERSION_WEBHOOK_PATH, conversionWebhook([FooMachinePool])),
  );
  await manager.start();
}

main().catch((error: unknown) => {
  if (error instanceof HelpRequested) {
    console.log(error.usage);
    process.exit(0);
  }
  console.error(`gadget-provider: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
