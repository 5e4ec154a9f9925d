// Fake cloud benchmark; the body lives in packages/examples/bench/fakecloud.ts so that it resolves
// the workspace packages. Run: ./dev bench fakecloud [--sizes 100,1000,5000]
await import("../packages/examples/bench/fakecloud.ts");
