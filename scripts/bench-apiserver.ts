// `./dev bench apiserver`: the benchmark lives in the testing package so it resolves that package's
// dependencies (client-node); see packages/testing/bench/apiserver.ts for what it measures, then
// packages/testing/bench/engines.ts (schema validation, CEL, server-side apply, JSON patch).
await import("../packages/testing/bench/apiserver.ts");
await import("../packages/testing/bench/engines.ts");
