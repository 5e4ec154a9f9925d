// The server side of the apiserver benchmark, in its own process so its CPU time can be measured
// apart from the clients'. Started by bench/apiserver.ts; answers "cpu" with process.cpuUsage().
import { startApiServer } from "../src/index.js";

const api = await startApiServer({ watchWindow: 50_000 });
process.on("message", (message: unknown) => {
  if (message === "cpu") {
    const { user, system } = process.cpuUsage();
    process.send?.({
      cpuMicros: user + system,
      heapMb: process.memoryUsage().heapUsed / 1024 / 1024,
      openWatches: api.openWatches,
    });
  } else if (message === "stop") {
    void api.stop().then(() => process.exit(0));
  }
});
process.send?.({ url: api.url });
