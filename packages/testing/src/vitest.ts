/**
 * The vitest binding of the conformance suite: {@link runMachinePoolConformance} registers the
 * InfraMachinePool scenarios as vitest tests. On its own subpath so that `@capi-ts/testing` loads
 * without vitest (vitest is an optional peer dependency, needed only here).
 *
 * @example
 * ```ts
 * // foo.conformance.test.ts
 * import { runMachinePoolConformance } from "@capi-ts/testing/vitest";
 *
 * runMachinePoolConformance({ name: "FooMachinePool", kind: FooMachinePool, ... });
 * ```
 *
 * @packageDocumentation
 */
export { runMachinePoolConformance } from "./conformance/vitest.js";
