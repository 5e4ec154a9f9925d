/**
 * Field sets as server-side apply tracks them: a trie of path elements in the `FieldsV1` notation
 * (`f:name`, `k:{"type":"Ready"}`, `v:"value"`, `i:3`), where a node is a member when the path itself is
 * in the set (`.` in `FieldsV1`).
 */
export class FieldSet {
  member = false;
  readonly children = new Map<string, FieldSet>();

  /** Adds a path (a list of path elements). The empty path (the root) is never a member. */
  insert(path: readonly string[]): void {
    if (path.length === 0) return;
    let node: FieldSet = this;
    for (const element of path) {
      let next = node.children.get(element);
      if (next === undefined) {
        next = new FieldSet();
        node.children.set(element, next);
      }
      node = next;
    }
    node.member = true;
  }

  /** The node at `path`, if any. */
  at(path: readonly string[]): FieldSet | undefined {
    let node: FieldSet | undefined = this;
    for (const element of path) {
      node = node.children.get(element);
      if (node === undefined) return undefined;
    }
    return node;
  }

  /** Whether `path` is a member. */
  has(path: readonly string[]): boolean {
    return path.length > 0 && this.at(path)?.member === true;
  }

  /** Whether the set has no members. */
  isEmpty(): boolean {
    if (this.member) return false;
    for (const child of this.children.values()) if (!child.isEmpty()) return false;
    return true;
  }

  /** Every member path. */
  paths(prefix: string[] = []): string[][] {
    const out: string[][] = [];
    if (this.member && prefix.length > 0) out.push(prefix);
    for (const [element, child] of this.children) out.push(...child.paths([...prefix, element]));
    return out;
  }

  /** A copy. */
  clone(): FieldSet {
    const out = new FieldSet();
    out.member = this.member;
    for (const [k, v] of this.children) out.children.set(k, v.clone());
    return out;
  }

  /** Members of this set or `other`. */
  union(other: FieldSet): FieldSet {
    const out = this.clone();
    out.addAll(other);
    return out;
  }

  private addAll(other: FieldSet): void {
    if (other.member) this.member = true;
    for (const [k, v] of other.children) {
      let mine = this.children.get(k);
      if (mine === undefined) {
        mine = new FieldSet();
        this.children.set(k, mine);
      }
      mine.addAll(v);
    }
  }

  /** Members of this set that are not members of `other`. */
  difference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    out.member = this.member && !other.member;
    for (const [k, v] of this.children) {
      const o = other.children.get(k);
      const child = o === undefined ? v.clone() : v.difference(o);
      if (!child.isEmpty()) out.children.set(k, child);
    }
    return out;
  }

  /** Members of both sets. */
  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    out.member = this.member && other.member;
    for (const [k, v] of this.children) {
      const o = other.children.get(k);
      if (o === undefined) continue;
      const child = v.intersection(o);
      if (!child.isEmpty()) out.children.set(k, child);
    }
    return out;
  }

  /** Every path that is a member or a prefix of a member (what the server's pruning treats as owned). */
  withPrefixes(): FieldSet {
    const out = new FieldSet();
    for (const [k, v] of this.children) {
      const child = v.withPrefixes();
      child.member = true;
      out.children.set(k, child);
    }
    return out;
  }

  /** Whether two sets have the same members. */
  equals(other: FieldSet): boolean {
    return this.difference(other).isEmpty() && other.difference(this).isEmpty();
  }

  /** The `fieldsV1` JSON object (`.` first, then elements in the server's order). */
  toFieldsV1(): Record<string, unknown> {
    return this.encode() ?? {};
  }

  /** The encoding of this node, or undefined when it holds no member. */
  private encode(): Record<string, unknown> | undefined {
    const keys = [...this.children.keys()];
    // f: < k: < v: sorts natively; only index elements (i:) need the element-aware order.
    if (keys.length > 1) {
      if (keys.some((k) => k.startsWith("i:"))) keys.sort(compareElements);
      else keys.sort();
    }
    const encoded: [string, Record<string, unknown>][] = [];
    for (const key of keys) {
      const child = this.children.get(key)?.encode();
      if (child !== undefined) encoded.push([key, child]);
    }
    if (encoded.length === 0) return this.member ? {} : undefined;
    const out: Record<string, unknown> = {};
    if (this.member) out["."] = {};
    for (const [key, child] of encoded) out[key] = child;
    return out;
  }

  /** Parses a `fieldsV1` JSON object. */
  static fromFieldsV1(value: unknown): FieldSet {
    const out = new FieldSet();
    fill(out, value);
    return out;
  }
}

function fill(node: FieldSet, value: unknown): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  const entries = Object.entries(value as Record<string, unknown>);
  for (const [key, child] of entries) {
    if (key === ".") {
      node.member = true;
      continue;
    }
    const next = new FieldSet();
    const isLeaf =
      child !== null &&
      typeof child === "object" &&
      Object.keys(child as Record<string, unknown>).length === 0;
    if (isLeaf) next.member = true;
    else fill(next, child);
    node.children.set(key, next);
  }
}

const ELEMENT_ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

function compareElements(a: string, b: string): number {
  const ta = ELEMENT_ORDER[a.charAt(0)] ?? 4;
  const tb = ELEMENT_ORDER[b.charAt(0)] ?? 4;
  if (ta !== tb) return ta - tb;
  if (a.startsWith("i:") && b.startsWith("i:")) return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Renders a path as the server does in conflict messages: `.spec.replicas`,
 * `.status.conditions[type="Ready"].status`, `.metadata.finalizers[="a"]`, `.spec.list[3]`.
 */
export function pathToString(path: readonly string[]): string {
  let out = "";
  for (const element of path) {
    const body = element.slice(2);
    switch (element.charAt(0)) {
      case "f":
        out += `.${body}`;
        break;
      case "k": {
        const fields = JSON.parse(body) as Record<string, unknown>;
        out += `[${Object.entries(fields)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(",")}]`;
        break;
      }
      case "v":
        out += `[=${body}]`;
        break;
      default:
        out += `[${body}]`;
    }
  }
  return out;
}
