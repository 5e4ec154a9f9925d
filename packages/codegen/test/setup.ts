// Run from source, the generator compiles the common runtime with TypeScript on first use (a built
// package reads it precompiled). Doing it here, before the tests of each file, keeps that one-time
// cost (seconds on a busy machine) out of whichever test happens to generate first, and its timeout.
import { compiledCommonRuntime } from "../src/runtime-files.js";

compiledCommonRuntime();
