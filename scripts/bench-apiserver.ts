// `./dev bench apiserver`: the benchmark lives in the testing package so it resolves that package's
// dependencies (client-node); see packages/testing/bench/apiserver.ts for what it measures.
await import("../packages/testing/bench/apiserver.ts");
