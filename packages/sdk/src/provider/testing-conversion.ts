import { isDeepStrictEqual } from "node:util";
import type * as z from "zod";
import { Annotations } from "../contract/constants.js";
import type { KindConversion } from "../crd/conversion.js";

/** What {@link expectLosslessConversion} checks a kind with. */
export interface LosslessConversionOptions {
  /** Objects (pools or templates) at any served version; each goes to every other version and back. */
  readonly samples?: readonly Record<string, unknown>[];
  /**
   * Random pools per served version, built from that version's zod schemas (default 0): short
   * strings, small numbers, every optional field present or absent at random, retried until the
   * field's schema accepts the value. Same seed, same objects.
   */
  readonly random?: { readonly count: number; readonly seed?: number };
}

/** What {@link expectLosslessConversion} needs of a defined kind. */
export interface ConvertedKind {
  /** The pool kind. */
  readonly kind: string;
  /** The kind's conversions; a kind with one schema has none. */
  readonly conversion: KindConversion | undefined;
}

/** A round trip that lost or changed data: where the first difference is. */
export class ConversionRoundTripError extends Error {
  override readonly name = "ConversionRoundTripError";
  /** The field path of the first difference, e.g. `spec.subnets[1]`. */
  readonly path: string;

  /** Builds the error of a round trip that differs first at `path`. */
  constructor(message: string, path: string) {
    super(message);
    this.path = path;
  }
}

/**
 * Checks that conversion loses nothing, as CAPI's conversion fuzz tests do: every sample (and every
 * random object, with `random`) goes from its version to each other served version and back — hub →
 * spoke → hub and spoke → hub → spoke — and must come back equal, the `cluster.x-k8s.io/conversion-data`
 * annotation aside. Throws a {@link ConversionRoundTripError} naming the trip and the field path of
 * the first difference (a conversion that throws fails it too); returns the number of trips checked.
 *
 * @example
 * ```ts
 * it("converts without loss", () => {
 *   expectLosslessConversion(FooMachinePool, { samples: [v1beta1Pool, v1beta2Pool], random: { count: 50 } });
 * });
 * ```
 */
export function expectLosslessConversion(
  definition: ConvertedKind,
  options: LosslessConversionOptions = {},
): number {
  const conversion = definition.conversion;
  if (!conversion) {
    throw new TypeError(
      `expectLosslessConversion: ${definition.kind} has one schema for every version (no spokes); there is nothing to convert`,
    );
  }
  const objects = [...(options.samples ?? [])];
  if (options.random && options.random.count > 0) {
    const next = seededRandom(options.random.seed ?? 1);
    for (const version of conversion.versions) {
      for (let i = 0; i < options.random.count; i++) {
        objects.push(randomPool(definition.kind, conversion, version, next));
      }
    }
  }
  let trips = 0;
  for (const [index, object] of objects.entries()) {
    const from = String(object.apiVersion).split("/").pop() ?? "";
    const label = `${definition.kind} ${object.kind === definition.kind ? "pool" : "template"} #${index}`;
    for (const to of conversion.versions) {
      if (to === from) continue;
      const trip = `${label}: ${from} → ${to} → ${from}`;
      let back: Record<string, unknown>;
      try {
        back = conversion.convert(conversion.convert(object, to), from);
      } catch (error) {
        throw new ConversionRoundTripError(
          `${trip}: the conversion threw: ${(error as Error).message}`,
          "",
        );
      }
      const path = firstDifference(withoutConversionData(object), withoutConversionData(back), "");
      if (path !== undefined) {
        throw new ConversionRoundTripError(
          `${trip} differs at ${path || "(the whole object)"}: expected ${show(valueAt(object, path))}, got ${show(valueAt(back, path))}`,
          path,
        );
      }
      trips++;
    }
  }
  return trips;
}

/** The first field path where two JSON values differ (`undefined` fields count as absent), or `undefined`. */
export function firstDifference(expected: unknown, actual: unknown, path = ""): string | undefined {
  if (isDeepStrictEqual(expected, actual)) return undefined;
  if (Array.isArray(expected) && Array.isArray(actual)) {
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      const found = firstDifference(expected[i], actual[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (isRecord(expected) && isRecord(actual)) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    for (const key of [...keys].sort()) {
      const found = firstDifference(expected[key], actual[key], path ? `${path}.${key}` : key);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return path;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function withoutConversionData(object: Record<string, unknown>): unknown {
  const copy = JSON.parse(JSON.stringify(object)) as Record<string, unknown>;
  const metadata = copy.metadata;
  if (isRecord(metadata) && isRecord(metadata.annotations)) {
    delete metadata.annotations[Annotations.ConversionData];
    if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
  }
  return copy;
}

function valueAt(object: unknown, path: string): unknown {
  let value: unknown = object;
  for (const part of path.match(/[^.[\]]+/g) ?? []) {
    value =
      isRecord(value) || Array.isArray(value)
        ? (value as Record<string, unknown>)[part]
        : undefined;
  }
  return value;
}

function show(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** mulberry32: small, fast and the same on every platform, so a failing seed fails again. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomPool(
  kind: string,
  conversion: KindConversion,
  version: string,
  next: () => number,
): Record<string, unknown> {
  const schemas = conversion.schemas[version];
  const pool: Record<string, unknown> = {
    apiVersion: `${conversion.group}/${version}`,
    kind,
    metadata: { name: `random-${Math.floor(next() * 1e6)}`, namespace: "default" },
    spec: schemas ? randomValue(schemas.spec, next, 0) : {},
  };
  if (schemas?.status && next() < 0.5) pool.status = randomValue(schemas.status, next, 0);
  return pool;
}

// What the generator reads of a zod schema: its definition (zod 4 keeps it at `_zod.def`).
interface SchemaDefinition {
  readonly type: string;
  readonly shape?: Readonly<Record<string, z.ZodType>>;
  readonly element?: z.ZodType;
  readonly innerType?: z.ZodType;
  readonly options?: readonly z.ZodType[];
  readonly entries?: Readonly<Record<string, string | number>>;
  readonly values?: readonly unknown[];
  readonly valueType?: z.ZodType;
}

function definitionOf(schema: z.ZodType): SchemaDefinition {
  return (schema as unknown as { _zod: { def: SchemaDefinition } })._zod.def;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const MAX_DEPTH = 6;

/** A value the schema accepts, when a few tries find one (else the last try). */
function randomValue(schema: z.ZodType, next: () => number, depth: number): unknown {
  let value: unknown;
  for (let attempt = 0; attempt < 10; attempt++) {
    value = candidate(schema, next, depth);
    if (schema.safeParse(value).success) return value;
  }
  return value;
}

function candidate(schema: z.ZodType, next: () => number, depth: number): unknown {
  const def = definitionOf(schema);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const bounds = schema as unknown as {
    minLength?: number | null;
    maxLength?: number | null;
    minValue?: number | null;
    maxValue?: number | null;
    isInt?: boolean;
  };
  switch (def.type) {
    case "string": {
      const min = bounds.minLength ?? 1;
      const max = Math.max(min, Math.min(bounds.maxLength ?? 8, min + 8));
      const length = min + Math.floor(next() * (max - min + 1));
      return Array.from({ length }, () => pick([...ALPHABET])).join("");
    }
    case "number":
    case "int": {
      const min = Number.isFinite(bounds.minValue) ? (bounds.minValue as number) : 0;
      const max = Number.isFinite(bounds.maxValue) ? (bounds.maxValue as number) : min + 100;
      return min + Math.floor(next() * (Math.min(max, min + 1000) - min + 1));
    }
    case "boolean":
      return next() < 0.5;
    case "enum":
      return pick(Object.values(def.entries ?? {}));
    case "literal":
      return pick(def.values ?? [null]);
    case "optional":
      return depth >= MAX_DEPTH || next() < 0.3
        ? undefined
        : randomValue(def.innerType as z.ZodType, next, depth);
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
      return randomValue(def.innerType as z.ZodType, next, depth);
    case "union":
      return randomValue(pick(def.options ?? []), next, depth);
    case "array": {
      const length = depth >= MAX_DEPTH ? 0 : Math.floor(next() * 3);
      return Array.from({ length }, () => randomValue(def.element as z.ZodType, next, depth + 1));
    }
    case "record": {
      const result: Record<string, unknown> = {};
      const count = depth >= MAX_DEPTH ? 0 : Math.floor(next() * 3);
      for (let i = 0; i < count; i++) {
        result[`k${i}`] = randomValue(def.valueType as z.ZodType, next, depth + 1);
      }
      return result;
    }
    case "object": {
      const result: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(def.shape ?? {})) {
        const value = randomValue(field, next, depth + 1);
        if (value !== undefined) result[key] = value;
      }
      return result;
    }
    default:
      // A kind of schema the generator does not know: leave the field out; samples can cover it.
      return undefined;
  }
}
