import { fieldError } from "./causes.js";
import type { FieldCause } from "./types.js";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MESSAGE =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** The problems `IsDNS1123Subdomain` reports for a name (empty when valid). */
export function dns1123SubdomainProblems(value: string): string[] {
  const problems: string[] = [];
  if (value.length > 253) problems.push("must be no more than 253 characters");
  if (!DNS1123_SUBDOMAIN.test(value)) problems.push(SUBDOMAIN_MESSAGE);
  return problems;
}

/** The problems `path.IsValidPathSegmentName` reports (names of embedded objects; empty when valid). */
export function pathSegmentProblems(value: string): string[] {
  if (value === "." || value === "..") return [`may not be '${value}'`];
  const problems: string[] = [];
  for (const illegal of ["/", "%"]) {
    if (value.includes(illegal)) problems.push(`may not contain '${illegal}'`);
  }
  return problems;
}

/** The problems `IsDNS1123Label` reports (empty when valid). */
export function dns1123LabelProblems(value: string): string[] {
  const problems: string[] = [];
  if (value.length > 63) problems.push("must be no more than 63 characters");
  if (!DNS1123_LABEL.test(value)) problems.push(LABEL_MESSAGE);
  return problems;
}

/** The problems `IsQualifiedName` reports for a label or annotation key (empty when valid). */
export function qualifiedNameProblems(value: string): string[] {
  const problems: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const [prefix = "", rest = ""] = parts;
    name = rest;
    if (prefix.length === 0) problems.push("prefix part must be non-empty");
    else for (const p of dns1123SubdomainProblems(prefix)) problems.push(`prefix part ${p}`);
  } else {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) problems.push("name part must be non-empty");
  else if (name.length > 63) problems.push("name part must be no more than 63 bytes");
  if (name.length > 0 && !QUALIFIED_NAME_PART.test(name)) problems.push(QUALIFIED_NAME_MESSAGE);
  return problems;
}

/**
 * Validates an object's `metadata` as the generic registry does for a custom resource on create
 * (`metadata.name` a DNS-1123 subdomain, or `generateName` given; label keys and values; annotation
 * keys). Also usable for built-in kinds whose names are DNS subdomains.
 *
 * @param meta - The object's `metadata` (anything; non-objects are reported).
 * @param options - `nameRule`: `subdomain` (the default) or `label` (Namespaces).
 */
export function validateObjectMeta(
  meta: unknown,
  options: {
    nameRule?: "subdomain" | "label" | "pathSegment";
    /** Field path of the metadata (default `metadata`). */
    at?: string;
    /** Whether a name (or generateName) is required (default true; embedded objects need none). */
    requireName?: boolean;
  } = {},
): FieldCause[] {
  const causes: FieldCause[] = [];
  const at = options.at ?? "metadata";
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) {
    return [fieldError("FieldValueRequired", at, "", "")];
  }
  const m = meta as Record<string, unknown>;
  const name = typeof m.name === "string" ? m.name : "";
  const generateName = typeof m.generateName === "string" ? m.generateName : "";
  const check =
    options.nameRule === "label"
      ? dns1123LabelProblems
      : options.nameRule === "pathSegment"
        ? pathSegmentProblems
        : dns1123SubdomainProblems;
  if (name.length === 0) {
    if (generateName.length === 0 && options.requireName !== false) {
      causes.push(
        fieldError("FieldValueRequired", `${at}.name`, "", "name or generateName is required"),
      );
    }
  } else {
    for (const problem of check(name)) {
      causes.push(fieldError("FieldValueInvalid", `${at}.name`, name, problem));
    }
  }
  if (generateName.length > 0) {
    // The server validates the prefix with a trailing '-' stripped and a placeholder suffix.
    const prefix = generateName.replace(/-+$/, "");
    for (const problem of check(prefix.length > 0 ? `${prefix}a` : "a")) {
      causes.push(fieldError("FieldValueInvalid", `${at}.generateName`, generateName, problem));
    }
  }
  const labels = m.labels;
  if (labels !== undefined && labels !== null && typeof labels === "object") {
    for (const [key, value] of Object.entries(labels as Record<string, unknown>)) {
      for (const problem of qualifiedNameProblems(key)) {
        causes.push(fieldError("FieldValueInvalid", `${at}.labels`, key, problem));
      }
      const text = typeof value === "string" ? value : String(value);
      if (text.length > 63) {
        causes.push(
          fieldError(
            "FieldValueInvalid",
            `${at}.labels`,
            text,
            "must be no more than 63 characters",
          ),
        );
      }
      if (!LABEL_VALUE.test(text)) {
        causes.push(fieldError("FieldValueInvalid", `${at}.labels`, text, LABEL_VALUE_MESSAGE));
      }
    }
  }
  const annotations = m.annotations;
  if (annotations !== undefined && annotations !== null && typeof annotations === "object") {
    let total = 0;
    for (const [key, value] of Object.entries(annotations as Record<string, unknown>)) {
      for (const problem of qualifiedNameProblems(key.toLowerCase())) {
        causes.push(fieldError("FieldValueInvalid", `${at}.annotations`, key, problem));
      }
      total += key.length + (typeof value === "string" ? value.length : 0);
    }
    if (total > 256 * 1024) {
      causes.push(
        fieldError(
          "FieldValueTooLong",
          `${at}.annotations`,
          "",
          "may not be more than 262144 bytes",
        ),
      );
    }
  }
  return causes;
}
