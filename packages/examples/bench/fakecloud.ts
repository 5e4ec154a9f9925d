/**
 * Benchmark of the fake cloud: how fast it simulates large pools, so conformance scenarios and the
 * demo can run big groups in test time. Run: `./dev bench fakecloud [--sizes 100,1000,5000]`.
 *
 * Prints, per pool size: wall time to scale 0 → N → 0 (cloud time simulated, timers fired), the cost
 * of one `describeGroup` (JSON round trip + zod validation) at size N, and a full instance refresh.
 *
 * @module
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { ManualClock } from "@capi-ts/sdk/runtime";
import { FakeScalingCloud } from "../src/cloud/cloud.js";

const { values } = parseArgs({ options: { sizes: { type: "string", default: "100,1000,5000" } } });
const sizes = values.sizes.split(",").map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(
      `--sizes must be a comma-separated list of positive integers, got "${values.sizes}"`,
    );
  }
  return n;
});

function ms(start: number): string {
  return `${(performance.now() - start).toFixed(1)} ms`;
}

console.log(`fake cloud benchmark (node ${process.version})`);
for (const size of sizes) {
  const clock = new ManualClock();
  const cloud = new FakeScalingCloud({ clock, seed: 1 });
  const lt = await cloud.client.createLaunchTemplate({
    name: "bench",
    data: { image: "img", instanceType: "small", userData: "#cloud-config\n" },
  });
  await cloud.client.createGroup({
    name: "bench",
    minSize: 0,
    maxSize: 10_000,
    desiredCapacity: 0,
    template: { id: lt.id, version: "$Latest" },
    zones: ["zone-a", "zone-b", "zone-c"],
  });
  clock.runUntilIdle();

  let start = performance.now();
  await cloud.client.setDesiredCapacity("bench", size);
  const upTimers = clock.runUntilIdle();
  const scaleUp = ms(start);

  start = performance.now();
  const rounds = 20;
  for (let n = 0; n < rounds; n++) await cloud.client.describeGroup("bench");
  const describe = `${((performance.now() - start) / rounds).toFixed(2)} ms`;

  start = performance.now();
  await cloud.client.createLaunchTemplateVersion(lt.id, {
    image: "img-2",
    instanceType: "small",
    userData: "v2",
  });
  await cloud.client.startInstanceRefresh("bench", { minHealthyPercentage: 80 });
  const refreshTimers = clock.runUntilIdle();
  const refresh = ms(start);
  const [done] = await cloud.client.describeInstanceRefreshes("bench");

  start = performance.now();
  await cloud.client.setDesiredCapacity("bench", 0);
  const downTimers = clock.runUntilIdle();
  const scaleDown = ms(start);

  console.log(
    `N=${size}: scale up ${scaleUp} (${upTimers} timers) | describeGroup ${describe}/call | ` +
      `refresh ${refresh} (${refreshTimers} timers, ${done?.status}) | scale down ${scaleDown} (${downTimers} timers)`,
  );
}
