/**
 * Renders the release assets clusterctl reads into out/: infrastructure-components.yaml, metadata.yaml
 * and cluster-template.yaml. Usage: node dist/manifests.js <version> [image]
 *   e.g. node dist/manifests.js v0.1.0 ghcr.io/acme/foo-provider:v0.1.0
 */
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { componentsYAML, metadataYAML, renderComponents } from "@capi-ts/sdk/manifests";
import { FooMachinePool } from "./kind.js";

/** The objects of infrastructure-components.yaml for an image. */
export function components(image: string) {
  return renderComponents({
    name: "foo",
    kinds: [FooMachinePool],
    image,
    // TODO: rules your own code needs beyond the kit's. The kit watches FooClusters (src/cluster.ts)
    // for the identity each Cluster names.
    extraRules: [
      {
        apiGroups: ["infrastructure.foo.example.com"],
        resources: ["fooclusters"],
        verbs: ["get", "list", "watch"],
      },
    ],
    // The default cloud credentials (foo-provider-credentials in the provider's namespace), from
    // clusterctl variables at `clusterctl init` (base64, as `export FOO_B64ENCODED_TOKEN=$(printf %s
    // "$TOKEN" | base64 -w0)`). The credentials hook (src/credentials.ts) reads it through the API for
    // pools whose Cluster names no identity of its own. Rename the keys to what your cloud needs.
    secrets: [
      {
        name: "credentials",
        data: { endpoint: "${FOO_B64ENCODED_ENDPOINT}", token: "${FOO_B64ENCODED_TOKEN}" },
      },
    ],
    // Scale from zero: the cluster-autoscaler reads the pools' status.capacity. Pass
    // { serviceAccount: { namespace, name } } to bind the role to its ServiceAccount here.
    autoscalerRole: true,
  });
}

async function main(): Promise<void> {
  const [version, image = `ghcr.io/acme/foo-provider:${process.argv[2]}`] = process.argv.slice(2);
  const match = /^v(\d+)\.(\d+)\.(\d+)/.exec(version ?? "");
  if (!match) throw new Error(`usage: node dist/manifests.js <version like v0.1.0> [image]`);
  await mkdir("out", { recursive: true });
  await writeFile("out/infrastructure-components.yaml", componentsYAML(components(image)));
  await writeFile(
    "out/metadata.yaml",
    metadataYAML([{ major: Number(match[1]), minor: Number(match[2]), contract: "v1beta2" }]),
  );
  for (const file of [
    "cluster-template.yaml",
    "cluster-template-clusterclass.yaml",
    "clusterclass-foo-default.yaml",
  ]) {
    await copyFile(`templates/${file}`, `out/${file}`);
  }
  console.log(
    `wrote out/infrastructure-components.yaml, out/metadata.yaml and the cluster templates (plain and clusterclass) for ${image}`,
  );
}

if (process.argv[1]?.endsWith("manifests.js")) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
