// Controller runtime benchmark; the body lives in packages/testing/bench/runtime.ts so that it resolves
// the workspace packages. Run: ./dev bench runtime [--sizes 100,1000,5000] [--concurrency 8] [--noop-passes 30]
await import("../packages/testing/bench/runtime.ts");
