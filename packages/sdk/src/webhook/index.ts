/**
 * Admission webhooks served by the manager: a {@link WebhookServer} (HTTPS, certificates as
 * cert-manager mounts them, a {@link Runnable} for `Manager.add`), the defaulting and validating
 * webhooks of an InfraMachinePool kind and its template ({@link infraMachinePoolWebhooks}: your rules,
 * plus the template immutability rule with the topology dry-run exemption of contract R19), and
 * building blocks for other kinds; and the conversion webhook of kinds with several schemas
 * ({@link conversionWebhook}, at {@link CONVERSION_WEBHOOK_PATH}).
 *
 * @example
 * ```ts
 * import { WebhookServer, infraMachinePoolWebhooks } from "@capi-ts/sdk/webhook";
 *
 * manager.add(
 *   new WebhookServer({ certDir: flags.webhookCertDir }).register(
 *     infraMachinePoolWebhooks(FooMachinePool, { validate: validateFooSpec }),
 *   ),
 * );
 * ```
 *
 * @packageDocumentation
 */
export type { Runnable } from "../runtime/runnable.js";
export {
  CONVERSION_WEBHOOK_PATH,
  type ConversionHandler,
  type ConversionRequest,
  type ConversionResponse,
  type ConversionResult,
  type ConvertibleKind,
  conversionWebhook,
} from "./conversion.js";
export {
  allowed,
  defaultingWebhook,
  denied,
  forKinds,
  type InfraMachinePoolWebhookOptions,
  infraMachinePoolWebhooks,
  isTopologyDryRun,
  type SpecAdmissionContext,
  type SpecDefaulter,
  type SpecValidator,
  validatingWebhook,
  webhookPath,
} from "./handlers.js";
export { type JsonPatchOp, jsonPatchDiff } from "./patch.js";
export { WebhookServer } from "./server.js";
export {
  DEFAULT_WEBHOOK_CERT_DIR,
  DEFAULT_WEBHOOK_SERVER_LIMITS,
  type WebhookServerLimits,
  type WebhookServerOptions,
} from "./server-options.js";
export type {
  AdmissionHandler,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionResult,
  GroupVersionKind,
} from "./types.js";
