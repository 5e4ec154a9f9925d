import { CodegenError, type InputLocation } from "./errors.js";

/**
 * The bounds the generator puts on its input, so that a hostile or broken CRD fails with a clear
 * error instead of exhausting memory, the stack or the clock.
 */
export interface InputLimits {
  /**
   * Most bytes read from one input (a file, standard input, a text input or the cluster's answer).
   */
  readonly maxInputBytes: number;
  /**
   * Most bytes of JSON one document may stand for, with every YAML alias expanded: 3 MiB, the
   * API server's limit on a request body, so nothing it would accept is refused.
   */
  readonly maxDocumentBytes: number;
  /**
   * Deepest nesting of objects and arrays in a document: 100, the depth the YAML parser itself
   * allows, so YAML and JSON inputs are held to the same bound. The deepest CAPI CRD nests 31.
   */
  readonly maxDepth: number;
}

/** The limits {@link generate} applies; see {@link InputLimits}. */
export const INPUT_LIMITS: InputLimits = Object.freeze({
  maxInputBytes: 64 * 1024 * 1024,
  maxDocumentBytes: 3 * 1024 * 1024,
  maxDepth: 100,
});

/** Formats a byte count the way the error messages use it. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MiB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KiB`;
  return `${bytes} bytes`;
}

/**
 * Refuses an input larger than {@link InputLimits.maxInputBytes} before it is parsed.
 *
 * @param location - the input, for the error
 * @param bytes - its size
 */
export function checkInputSize(location: InputLocation, bytes: number): void {
  if (bytes > INPUT_LIMITS.maxInputBytes) {
    throw new CodegenError(
      location,
      `the input is ${formatBytes(bytes)}, more than the ${formatBytes(INPUT_LIMITS.maxInputBytes)} the generator reads from one input; split it into several files`,
    );
  }
}

interface Frame {
  readonly value: unknown;
  readonly path: string;
  readonly depth: number;
}

/** Marks the end of an object's children in the walk, to take it off the current path. */
const LEAVE = Symbol("leave");

/**
 * Checks that a parsed document is a finite JSON tree within {@link INPUT_LIMITS}: not deeper than
 * `maxDepth`, not larger than `maxDocumentBytes` once YAML aliases are expanded (a few kilobytes
 * of aliases can stand for gigabytes, the "billion laughs"), and not containing itself (an alias
 * inside its own anchor). The walk is iterative and stops at the first excess, so its cost is
 * bounded by the limits, not by what the document stands for.
 *
 * @param value - the parsed document
 * @param at - builds the error location from a JSON path inside the document
 * @throws {@link CodegenError} naming the path where a limit was crossed
 */
export function checkDocumentBounds(value: unknown, at: (path: string) => InputLocation): void {
  const { maxDepth, maxDocumentBytes } = INPUT_LIMITS;
  const onPath = new Set<object>();
  const stack: (Frame | { readonly leave: object; readonly marker: typeof LEAVE })[] = [
    { value, path: "", depth: 0 },
  ];
  let bytes = 0;
  while (stack.length > 0) {
    const frame = stack.pop() as Frame | { leave: object; marker: typeof LEAVE };
    if ("marker" in frame) {
      onPath.delete(frame.leave);
      continue;
    }
    const current = frame.value;
    if (typeof current === "string") bytes += current.length + 2;
    else if (typeof current !== "object" || current === null) bytes += 5;
    else {
      if (onPath.has(current)) {
        throw new CodegenError(
          at(frame.path),
          "the value contains itself (a YAML alias inside its own anchor); a CRD must be a finite tree, so write the value out",
        );
      }
      if (frame.depth >= maxDepth) {
        throw new CodegenError(
          at(frame.path),
          `objects and arrays are nested more than ${maxDepth} deep; the generator reads at most ${maxDepth} levels (the deepest CAPI CRD has 31)`,
        );
      }
      onPath.add(current);
      stack.push({ leave: current, marker: LEAVE });
      bytes += 2;
      if (Array.isArray(current)) {
        for (let index = current.length - 1; index >= 0; index--) {
          bytes += 1;
          stack.push({
            value: current[index],
            path: `${frame.path}[${index}]`,
            depth: frame.depth + 1,
          });
        }
      } else {
        const keys = Object.keys(current);
        for (let index = keys.length - 1; index >= 0; index--) {
          const key = keys[index] as string;
          bytes += key.length + 4;
          stack.push({
            value: (current as Record<string, unknown>)[key],
            path: frame.path === "" ? key : `${frame.path}.${key}`,
            depth: frame.depth + 1,
          });
        }
      }
    }
    if (bytes > maxDocumentBytes) {
      throw new CodegenError(
        at(frame.path),
        `the document stands for more than ${formatBytes(maxDocumentBytes)} of JSON (the API server's request limit) once YAML aliases are expanded; remove the aliases or split the document`,
      );
    }
  }
}
