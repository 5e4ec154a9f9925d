// The in-memory API server of `./dev bench peers --backend memory`, in its own process so its CPU
// time is measured apart from the peers' and the harness's. Answers "cpu", "requests" (the log, less
// the harness's own requests), "clear" and "stop" over IPC.
import { startApiServer } from "../src/index.js";
import { gadgetCrd } from "./peers/gadget.js";

const harnessAgent = process.argv[2] ?? "";
const api = await startApiServer({ crds: [gadgetCrd], watchWindow: 50_000 });
process.on("message", (message: unknown) => {
  if (message === "cpu") {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpuMicros: user + system });
  } else if (message === "requests") {
    const records = api.requests().filter((record) => record.userAgent !== harnessAgent);
    process.send?.({
      verbs: records.map((record) =>
        process.env.BENCH_PATHS ? `${record.verb}:${record.path}` : record.verb,
      ),
    });
  } else if (message === "clear") {
    api.clearRequests();
    process.send?.({ cleared: true });
  } else if (message === "stop") {
    void api.stop().then(() => process.exit(0));
  }
});
process.send?.({ url: api.url });
