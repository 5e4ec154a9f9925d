// Patch helper and status writer benchmark; the body lives in packages/sdk/bench/patch.ts so that it
// resolves the SDK sources. Run: ./dev bench patch [--sizes 100,1000,10000] [--iterations 200]
await import("../packages/sdk/bench/patch.ts");
