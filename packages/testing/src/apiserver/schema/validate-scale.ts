/**
 * The checks of a CRD's scale subresource fields: the replicas paths must hold int64 values within the
 * server's bounds and the label selector path a string, with the accessor errors of `unstructured`.
 *
 * @module
 */
import { fieldError } from "./causes.js";
import { isPlainObject, jsonType } from "./json-values.js";
import type { FieldCause } from "./types.js";

const GO_TYPE: Record<string, string> = {
  string: "string",
  integer: "int64",
  number: "float64",
  boolean: "bool",
  object: "map[string]interface {}",
  array: "[]interface {}",
};

function goValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isPlainObject(value)) {
    return `map[${Object.keys(value)
      .sort()
      .map((k) => `${k}:${goValue(value[k])}`)
      .join(" ")}]`;
  }
  return String(value);
}

/** `unstructured.NestedInt64`/`NestedString` as the scale checks use them. */
export function checkScaleField(
  obj: unknown,
  jsonPath: string,
  want: "int64" | "string",
  out: FieldCause[],
): void {
  const fields = jsonPath.replace(/^\./, "").split(".");
  let current: unknown = obj;
  for (let i = 0; i < fields.length; i++) {
    if (!isPlainObject(current)) {
      const at = `.${fields.join(".")}`;
      out.push(
        fieldError(
          "FieldValueInvalid",
          jsonPath,
          want === "int64" ? 0 : "",
          `${at} accessor error: ${goValue(current)} is of the type ${GO_TYPE[jsonType(current)] ?? "interface {}"}, expected map[string]interface{}`,
        ),
      );
      return;
    }
    const key = fields[i] as string;
    if (!(key in current)) return;
    current = current[key];
  }
  const actual = jsonType(current);
  const ok = want === "int64" ? actual === "integer" : actual === "string";
  if (!ok) {
    out.push(
      fieldError(
        "FieldValueInvalid",
        jsonPath,
        want === "int64" ? 0 : "",
        `.${fields.join(".")} accessor error: ${goValue(current)} is of the type ${GO_TYPE[actual] ?? "interface {}"}, expected ${want}`,
      ),
    );
    return;
  }
  if (want === "int64") {
    const n = current as number;
    if (n < 0)
      out.push(fieldError("FieldValueInvalid", jsonPath, n, "should be a non-negative integer"));
    else if (n > 2147483647) {
      out.push(
        fieldError("FieldValueInvalid", jsonPath, n, "should be less than or equal to 2147483647"),
      );
    }
  }
}
