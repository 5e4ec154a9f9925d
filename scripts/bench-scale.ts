// One provider manager at scale, processes as in production; the body lives in
// packages/examples/bench/scale.ts so that it resolves the workspace packages.
// Run: ./dev bench scale [--pools 1000] [--clusters 100] [--replicas 3] [--speed 30] [--steady 60]
await import("../packages/examples/bench/scale.ts");
