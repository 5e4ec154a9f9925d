import { collectDefaultMetrics, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { RuntimeMetrics } from "./metrics.js";

/** `# TYPE` lines of a text exposition, by metric name. */
function typesOf(text: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    types.set(match[1] as string, match[2] as string);
  }
  return types;
}

/** Label names of the first sample of `name`. */
function labelNamesOf(text: string, name: string): string[] {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  if (!line?.startsWith(`${name}{`)) return [];
  const labels = line.slice(name.length + 1, line.indexOf("}"));
  return [...labels.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)].map((m) => m[1] as string).sort();
}

describe("process metrics", () => {
  it("exports prom-client's default metrics by the same names, types and labels", async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    // Let the GC histogram and the event-loop lag see something, in both.
    const metrics = new RuntimeMetrics({ processMetrics: true });
    await metrics.text();
    await registry.metrics();
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const theirs = await registry.metrics();
    const ours = await metrics.text();
    const theirTypes = typesOf(theirs);
    const ourTypes = typesOf(ours);
    expect(theirTypes.size).toBeGreaterThan(20);
    for (const [name, type] of theirTypes) {
      expect({ name, type: ourTypes.get(name) }).toEqual({ name, type });
      // A GC may not have happened in this process yet; the histogram then has no series in either.
      if (name === "nodejs_gc_duration_seconds") continue;
      expect({ name, labels: labelNamesOf(ours, name) }).toEqual({
        name,
        labels: labelNamesOf(theirs, name),
      });
    }
  });

  it("reads the process at each scrape: CPU only goes up, memory and version are there", async () => {
    const metrics = new RuntimeMetrics({ processMetrics: true });
    const before = await metrics.value("process_cpu_seconds_total");
    // Spend 20 ms of CPU, however long a busy machine takes to give it.
    const from = process.cpuUsage();
    while (process.cpuUsage(from).user < 20_000) Math.sqrt(Math.random());
    const after = await metrics.value("process_cpu_seconds_total");
    expect(after).toBeGreaterThan(before);
    expect(await metrics.value("process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(await metrics.value("process_resident_memory_bytes")).toBeGreaterThan(10 * 2 ** 20);
    expect(await metrics.value("nodejs_heap_size_used_bytes")).toBeGreaterThan(2 ** 20);
    expect(
      await metrics.value("nodejs_heap_space_size_used_bytes", { space: "old" }),
    ).toBeGreaterThan(0);
    const start = await metrics.value("process_start_time_seconds");
    expect(Math.abs(start - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
    const [major] = process.versions.node.split(".");
    expect(await metrics.value("nodejs_version_info", { major: major as string })).toBe(1);
    expect(await metrics.value("nodejs_active_resources_total")).toBeGreaterThanOrEqual(0);
    if (process.platform === "linux") {
      expect(await metrics.value("process_open_fds")).toBeGreaterThan(0);
      expect(await metrics.value("process_max_fds")).toBeGreaterThan(0);
    }
  });

  it("is off by default", async () => {
    const metrics = new RuntimeMetrics();
    expect(await metrics.text()).not.toContain("process_cpu_seconds_total");
    await expect(metrics.value("process_cpu_seconds_total")).rejects.toThrow(/no metric named/);
  });
});
