// The provider kit at scale; the body lives in packages/examples/bench/kit.ts so that it resolves
// the workspace packages. Run: ./dev bench kit [--pools 100,500] [--replicas 3] [--speed 30] [--steady 60]
await import("../packages/examples/bench/kit.ts");
