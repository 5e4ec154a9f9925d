// The phases page of the provider guide (docs/guides/provider/phases.md) is the one list of the kit's
// phases in the docs: its marked lists must name the default pipeline's phases, in order, each with
// the sections it writes. A phase added to the pipeline and not to the page fails here. The one-line
// sketch in docs/architecture.md's data flow is held to the same order.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { defaultDeletePhases, defaultPoolPhases } from "./pipeline.js";
import type { FakeSettings, FakeSpec } from "./testing.js";

const docs = new URL("../../../../docs/", import.meta.url);
const page = readFileSync(new URL("guides/provider/phases.md", docs), "utf8");
const architecture = readFileSync(new URL("architecture.md", docs), "utf8");

interface ListedPhase {
  name: string;
  writes: string[];
}

/** The items of the list between `<!-- phases:<marker> -->` and `<!-- /phases:<marker> -->`. */
function listedPhases(marker: string): ListedPhase[] {
  const start = page.indexOf(`<!-- phases:${marker} -->`);
  const end = page.indexOf(`<!-- /phases:${marker} -->`);
  if (start < 0 || end < start) throw new Error(`phases.md has no list marked phases:${marker}`);
  const items = page
    .slice(start, end)
    .split("\n")
    .filter((line) => /^\d+\. /.test(line));
  return items.map((line) => {
    const match = /^\d+\. `(\w+)` \(writes (nothing|`\w+`(?:, `\w+`)*)\)/.exec(line);
    if (!match?.[1] || !match[2])
      throw new Error(`phases.md: an item without "\`name\` (writes …)": ${line}`);
    const writes =
      match[2] === "nothing" ? [] : [...match[2].matchAll(/`(\w+)`/g)].map((m) => m[1] ?? "");
    return { name: match[1], writes };
  });
}

function pipelineOf(phases: readonly { name: string; writes: readonly string[] }[]): ListedPhase[] {
  return phases.map((phase) => ({ name: phase.name, writes: [...phase.writes] }));
}

describe("the phases page", () => {
  it("lists the phases of a pool in the pipeline's order, with what each writes", () => {
    expect(listedPhases("pool")).toEqual(pipelineOf(defaultPoolPhases<FakeSpec, FakeSettings>()));
  });

  it("lists the phases of a pool being deleted", () => {
    expect(listedPhases("delete")).toEqual(
      pipelineOf(defaultDeletePhases<FakeSpec, FakeSettings>()),
    );
  });

  it("agrees with the data-flow sketch of architecture.md", () => {
    const sketch = /-> phases \(([^;]*);\s*or teardown\)/.exec(architecture);
    if (!sketch?.[1])
      throw new Error('architecture.md: no "-> phases (…; or teardown)" in the data flow');
    const names = sketch[1].split(",").map((name) => name.trim());
    expect(names).toEqual(defaultPoolPhases<FakeSpec, FakeSettings>().map((phase) => phase.name));
  });
});
