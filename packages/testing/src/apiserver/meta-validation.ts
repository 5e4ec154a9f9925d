import { type InvalidCause, invalidValueCause, requiredCause } from "./errors.js";
import type { KubeObject } from "./types.js";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** Checks a name as the server does for the kind: DNS label for namespaces, DNS subdomain otherwise. */
export function validateName(name: string, dnsLabel: boolean): InvalidCause[] {
  if (dnsLabel) {
    if (name.length > 63)
      return [invalidValueCause("metadata.name", name, "must be no more than 63 characters")];
    if (!DNS1123_LABEL.test(name)) return [invalidValueCause("metadata.name", name, LABEL_MSG)];
    return [];
  }
  if (name.length > 253)
    return [invalidValueCause("metadata.name", name, "must be no more than 253 characters")];
  if (!DNS1123_SUBDOMAIN.test(name))
    return [invalidValueCause("metadata.name", name, SUBDOMAIN_MSG)];
  return [];
}

function validateQualifiedKey(key: string, field: string): InvalidCause[] {
  const slash = key.indexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const causes: InvalidCause[] = [];
  if (prefix !== undefined && (!DNS1123_SUBDOMAIN.test(prefix) || prefix.length > 253)) {
    causes.push(invalidValueCause(field, key, `prefix part ${SUBDOMAIN_MSG}`));
  }
  if (name.length > 63)
    causes.push(invalidValueCause(field, key, "name part must be no more than 63 bytes"));
  else if (!QUALIFIED_NAME.test(name))
    causes.push(invalidValueCause(field, key, QUALIFIED_NAME_MSG));
  return causes;
}

/** Metadata checks every kind gets: name, labels, annotation keys, owner references, finalizers. */
export function validateObjectMeta(obj: KubeObject, dnsLabelName: boolean): InvalidCause[] {
  const meta = obj.metadata;
  const causes: InvalidCause[] = [];
  if (!meta.name) causes.push(requiredCause("metadata.name", "name or generateName is required"));
  else causes.push(...validateName(meta.name, dnsLabelName));
  for (const [key, value] of Object.entries(meta.labels ?? {})) {
    causes.push(...validateQualifiedKey(key, "metadata.labels"));
    if (typeof value !== "string" || value.length > 63 || !LABEL_VALUE.test(value)) {
      causes.push(
        invalidValueCause(
          "metadata.labels",
          value,
          value.length > 63 ? "must be no more than 63 characters" : LABEL_VALUE_MSG,
        ),
      );
    }
  }
  for (const key of Object.keys(meta.annotations ?? {})) {
    causes.push(...validateQualifiedKey(key.toLowerCase(), "metadata.annotations"));
  }
  const owners = meta.ownerReferences ?? [];
  owners.forEach((ref, i) => {
    const at = `metadata.ownerReferences[${i}]`;
    if (!ref.apiVersion)
      causes.push(invalidValueCause(`${at}.apiVersion`, "", "version must not be empty"));
    if (!ref.kind) causes.push(invalidValueCause(`${at}.kind`, "", "kind must not be empty"));
    if (!ref.name) causes.push(invalidValueCause(`${at}.name`, "", "name must not be empty"));
    if (!ref.uid) causes.push(invalidValueCause(`${at}.uid`, "", "uid must not be empty"));
  });
  if (owners.filter((r) => r.controller === true).length > 1) {
    causes.push(
      invalidValueCause(
        "metadata.ownerReferences",
        owners,
        "Only one reference can have Controller set to true",
      ),
    );
  }
  for (const f of meta.finalizers ?? []) {
    if (typeof f !== "string" || f === "") {
      causes.push(invalidValueCause("metadata.finalizers", f, "name part must be non-empty"));
      continue;
    }
    if (["orphan", "foregroundDeletion", "kubernetes"].includes(f)) continue;
    // A finalizer is a qualified name, with or without a "/": the real server only warns about a
    // missing domain, but refuses a name part over 63 characters either way.
    causes.push(...validateQualifiedKey(f, "metadata.finalizers"));
  }
  return causes;
}
