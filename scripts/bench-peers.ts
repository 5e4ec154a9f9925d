// Side-by-side benchmark of capi-ts, plain client-node and Go controller-runtime; the body lives in
// packages/testing/bench/peers.ts so that it resolves the workspace packages.
// Run: ./dev bench peers [--backend real|memory] [--n 1000,5000] [--rounds 3] [--steady 30]
await import("../packages/testing/bench/peers.ts");
