import { readdir, readFile, stat } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { loadAll } from "js-yaml";
import { createOrReplace, type RawTarget, rawRequest } from "./http.js";

/**
 * A CustomResourceDefinition to install: a path to a YAML/JSON file (several documents allowed), a
 * folder of such files (read recursively), or the object itself.
 */
export type CRDSource = string | Readonly<Record<string, unknown>>;

interface LoadedCRD {
  object: Record<string, unknown>;
  name: string;
  group: string;
  plural: string;
  servedVersions: string[];
  origin: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describeCRD(object: Record<string, unknown>, origin: string): LoadedCRD {
  if (
    object.apiVersion !== "apiextensions.k8s.io/v1" ||
    object.kind !== "CustomResourceDefinition"
  ) {
    throw new Error(
      `${origin}: expected an apiextensions.k8s.io/v1 CustomResourceDefinition, got apiVersion ${JSON.stringify(object.apiVersion)} kind ${JSON.stringify(object.kind)}. Pass only CRD documents to installCRDs().`,
    );
  }
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const spec = isRecord(object.spec) ? object.spec : {};
  const names = isRecord(spec.names) ? spec.names : {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isRecord) : [];
  const name = metadata.name;
  const group = spec.group;
  const plural = names.plural;
  if (typeof name !== "string" || typeof group !== "string" || typeof plural !== "string") {
    throw new Error(
      `${origin}: the CRD lacks metadata.name, spec.group or spec.names.plural; it is not a complete CustomResourceDefinition.`,
    );
  }
  return {
    object: { ...object },
    name,
    group,
    plural,
    servedVersions: versions
      .filter((version) => version.served === true && typeof version.name === "string")
      .map((version) => String(version.name)),
    origin,
  };
}

async function filesUnder(path: string): Promise<string[]> {
  const info = await stat(path).catch(() => {
    throw new Error(
      `installCRDs: ${path} does not exist; pass a CRD file, a folder of them, or a CRD object.`,
    );
  });
  if (info.isFile()) return [path];
  const entries = await readdir(path, { withFileTypes: true });
  const nested = await Promise.all(
    entries
      .filter(
        (entry) => entry.isDirectory() || [".yaml", ".yml", ".json"].includes(extname(entry.name)),
      )
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((entry) =>
        entry.isDirectory() ? filesUnder(join(path, entry.name)) : [join(path, entry.name)],
      ),
  );
  return nested.flat();
}

/** Reads every CRD the sources name, checking each is a complete CustomResourceDefinition. */
export async function loadCRDs(sources: CRDSource | readonly CRDSource[]): Promise<LoadedCRD[]> {
  const list: readonly CRDSource[] = Array.isArray(sources) ? sources : [sources as CRDSource];
  const loaded: LoadedCRD[] = [];
  for (const source of list) {
    if (typeof source !== "string") {
      loaded.push(describeCRD({ ...source }, "CRD object"));
      continue;
    }
    for (const file of await filesUnder(resolve(source))) {
      const text = await readFile(file, "utf8");
      let documents: unknown[];
      try {
        documents = loadAll(text);
      } catch (e) {
        throw new Error(`${file} is not valid YAML: ${(e as Error).message}`);
      }
      for (const [index, value] of documents.entries()) {
        if (value === null || value === undefined) continue;
        if (!isRecord(value)) throw new Error(`${file} (document ${index + 1}) is not an object.`);
        loaded.push(describeCRD(value, `${file} (document ${index + 1})`));
      }
    }
  }
  return loaded;
}

function conditionStatus(object: unknown, type: string): string | undefined {
  if (!isRecord(object) || !isRecord(object.status) || !Array.isArray(object.status.conditions))
    return undefined;
  const condition = object.status.conditions.find((c: unknown) => isRecord(c) && c.type === type);
  return isRecord(condition) && typeof condition.status === "string" ? condition.status : undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Creates (or replaces) each CRD, then waits until each is Established, its resource shows in
 * discovery for every served version, and a LIST of it answers 200, so the caller can use it at once:
 * right after Established a real kube-apiserver may still answer the first read 429 "storage is
 * (re)initializing" while it sets up the resource's storage (DIVERGENCES.md D12).
 */
export async function installCRDsOn(
  target: RawTarget,
  sources: CRDSource | readonly CRDSource[],
  timeoutMs = 60_000,
): Promise<void> {
  const crds = await loadCRDs(sources);
  const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  for (const crd of crds) {
    const response = await createOrReplace(target, base, {
      ...crd.object,
      metadata: { ...(crd.object.metadata as object), name: crd.name },
    });
    if (response.status >= 300) {
      const message = isRecord(response.body) ? response.body.message : response.body;
      throw new Error(
        `installCRDs: the API server refused ${crd.name} from ${crd.origin} (HTTP ${response.status}): ${String(message)}`,
      );
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    for (;;) {
      const current = await rawRequest(target, "GET", `${base}/${crd.name}`);
      if (conditionStatus(current.body, "Established") === "True") break;
      if (conditionStatus(current.body, "NamesAccepted") === "False") {
        throw new Error(
          `installCRDs: the names of ${crd.name} were not accepted (a conflict with another CRD?).`,
        );
      }
      if (Date.now() > deadline)
        throw new Error(`installCRDs: ${crd.name} was not Established within ${timeoutMs} ms.`);
      await sleep(100);
    }
    for (const version of crd.servedVersions) {
      for (;;) {
        const discovery = await rawRequest(target, "GET", `/apis/${crd.group}/${version}`);
        const resources =
          isRecord(discovery.body) && Array.isArray(discovery.body.resources)
            ? discovery.body.resources
            : [];
        if (
          resources.some((resource: unknown) => isRecord(resource) && resource.name === crd.plural)
        )
          break;
        if (Date.now() > deadline) {
          throw new Error(
            `installCRDs: ${crd.plural}.${crd.group}/${version} did not appear in discovery within ${timeoutMs} ms.`,
          );
        }
        await sleep(100);
      }
      // A cluster-wide LIST reads the resource's storage whether it is namespaced or not.
      for (;;) {
        const list = await rawRequest(
          target,
          "GET",
          `/apis/${crd.group}/${version}/${crd.plural}?limit=1`,
        );
        if (list.status === 200) break;
        if (Date.now() > deadline) {
          const message = isRecord(list.body) ? list.body.message : list.body;
          throw new Error(
            `installCRDs: ${crd.plural}.${crd.group}/${version} was not readable within ${timeoutMs} ms: the last LIST answered HTTP ${list.status} (${String(message)}).`,
          );
        }
        await sleep(100);
      }
    }
  }
}
