/**
 * JSON merge patch (RFC 7386): objects merge recursively, `null` deletes a key, anything else
 * (arrays included) replaces. Returns a new value; the inputs are not modified.
 */
export function jsonMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return clone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete result[key];
    } else {
      result[key] = jsonMergePatch(result[key], value);
    }
  }
  return result;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function clone(v: unknown): unknown {
  return v === undefined ? undefined : structuredClone(v);
}
