import type { ResourceType, ServedVersion } from "./types.js";

/** A resource type resolved for one request: which type, in which served version. */
export interface ResolvedResource {
  rt: ResourceType;
  served: ServedVersion;
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
}

/** Builds `group/version` (or the bare version for the core group). */
export function groupVersion(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** A resource type resolved in its storage version (or its first served one). */
export function storageView(rt: ResourceType): ResolvedResource | undefined {
  const served =
    rt.versions.find((v) => groupVersion(rt.group, v.version) === rt.storageApiVersion) ??
    rt.versions[0];
  if (!served) return undefined;
  return { rt, served, apiVersion: groupVersion(rt.group, served.version) };
}

/**
 * Orders versions as Kubernetes does for "preferred version": GA before beta before alpha,
 * higher numbers first, non-Kubernetes-looking versions last, alphabetically.
 */
export function compareKubeVersions(a: string, b: string): number {
  const pa = parseKubeVersion(a);
  const pb = parseKubeVersion(b);
  if (pa && pb) {
    if (pa.stage !== pb.stage) return pb.stage - pa.stage;
    if (pa.major !== pb.major) return pb.major - pa.major;
    return pb.minor - pa.minor;
  }
  if (pa) return -1;
  if (pb) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function parseKubeVersion(v: string): { major: number; stage: number; minor: number } | undefined {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
  if (!m) return undefined;
  const stage = m[2] === undefined ? 3 : m[2] === "beta" ? 2 : 1;
  return { major: Number(m[1]), stage, minor: m[3] === undefined ? 0 : Number(m[3]) };
}

/** Every resource type the server currently serves, indexed for routing and discovery. */
export class Registry {
  private readonly types = new Set<ResourceType>();
  private readonly byGv = new Map<string, Map<string, ResolvedResource>>();

  register(rt: ResourceType): void {
    this.types.add(rt);
    this.rebuild();
  }

  unregister(rt: ResourceType): void {
    this.types.delete(rt);
    this.rebuild();
  }

  all(): ResourceType[] {
    return [...this.types];
  }

  /** Resolves `group/version/plural`; undefined when not served. */
  lookup(group: string, version: string, plural: string): ResolvedResource | undefined {
    return this.byGv.get(groupVersion(group, version))?.get(plural);
  }

  /** Resources served in one group version, for `/apis/<g>/<v>` discovery. */
  resourcesOf(group: string, version: string): ResolvedResource[] | undefined {
    const m = this.byGv.get(groupVersion(group, version));
    return m ? [...m.values()] : undefined;
  }

  /** Types that read or write one storage (a storage may be served by several groups). */
  byStorage(storageKey: string): ResourceType[] {
    return [...this.types].filter((t) => t.storageKey === storageKey);
  }

  /** Served groups with their versions, preferred version first. */
  groups(): { name: string; versions: string[] }[] {
    const map = new Map<string, Set<string>>();
    for (const t of this.types) {
      let set = map.get(t.group);
      if (!set) {
        set = new Set();
        map.set(t.group, set);
      }
      for (const v of t.versions) set.add(v.version);
    }
    return [...map.entries()].map(([name, versions]) => ({
      name,
      versions: [...versions].sort(compareKubeVersions),
    }));
  }

  private rebuild(): void {
    this.byGv.clear();
    for (const rt of this.types) {
      for (const served of rt.versions) {
        const gv = groupVersion(rt.group, served.version);
        let m = this.byGv.get(gv);
        if (!m) {
          m = new Map();
          this.byGv.set(gv, m);
        }
        m.set(rt.plural, { rt, served, apiVersion: gv });
      }
    }
  }
}
