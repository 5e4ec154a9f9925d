// The local clusterctl repository the providerUpgrade scenario hands to the real clusterctl: the
// layout clusterctl's local repository reads ({base}/{provider-label}/{version}/{file}), core's entry
// with only its Namespace, and clear refusals of names and versions clusterctl would not take.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeClusterctlRepository } from "../../src/controlplane/clusterctl-repository.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-clusterctl-repo-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const release = (version: string) => ({
  version,
  components: `# components ${version}\n`,
  metadata: "kind: Metadata\n",
});

describe("writeClusterctlRepository", () => {
  it("lays out every release and core's inventory entry, and names them in the config", async () => {
    const repo = await writeClusterctlRepository({
      dir,
      provider: "acme",
      releases: [release("v0.1.0"), release("v0.2.0")],
      coreRelease: "v1.14.2",
    });
    for (const version of ["v0.1.0", "v0.2.0"]) {
      const base = join(dir, "infrastructure-acme", version);
      expect(await readFile(join(base, "infrastructure-components.yaml"), "utf8")).toBe(
        `# components ${version}\n`,
      );
      expect(await readFile(join(base, "metadata.yaml"), "utf8")).toBe("kind: Metadata\n");
    }
    const core = join(dir, "cluster-api", "v1.14.2");
    expect(await readFile(join(core, "core-components.yaml"), "utf8")).toBe(
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: capi-system\n",
    );
    expect(await readFile(join(core, "metadata.yaml"), "utf8")).toContain(
      "  - major: 1\n    minor: 14\n    contract: v1beta2",
    );
    const config = await readFile(repo.config, "utf8");
    expect(config).toContain(`url: file://${join(core, "core-components.yaml")}`);
    expect(config).toContain(
      `url: file://${join(dir, "infrastructure-acme", "v0.1.0", "infrastructure-components.yaml")}`,
    );
    expect(config).toContain(`overridesFolder: ${join(dir, "overrides")}`);
  });

  it("refuses a provider name or a version clusterctl would not take, saying which", async () => {
    await expect(
      writeClusterctlRepository({ dir, provider: "Acme", releases: [release("v0.1.0")] }),
    ).rejects.toThrow(/"Acme" is not \[a-z\]\[a-z0-9-\]\*/);
    await expect(
      writeClusterctlRepository({ dir, provider: "acme", releases: [release("0.1")] }),
    ).rejects.toThrow(/"0.1" is not vMAJOR.MINOR.PATCH/);
    await expect(
      writeClusterctlRepository({ dir, provider: "acme", releases: [] }),
    ).rejects.toThrow(/no releases/);
  });
});
