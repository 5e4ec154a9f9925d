import { isIPv4, isIPv6 } from "node:net";
import { KUBERNETES_STRING_FORMATS } from "@capi-ts/sdk/crd";
import type { SchemaType } from "./types.js";

/**
 * The format the server keeps for a schema node, or `undefined` when it strips it: unknown string
 * formats are ignored, `integer` keeps only int32/int64 and `number` only float/double.
 */
export function normalizeFormat(format: string, type: SchemaType | undefined): string | undefined {
  if (type === undefined || type === "string") {
    const normalized = format.replaceAll("-", "");
    return KUBERNETES_STRING_FORMATS.has(normalized) ? format : undefined;
  }
  if (type === "integer") return format === "int32" || format === "int64" ? format : undefined;
  if (type === "number") return format === "float" || format === "double" ? format : undefined;
  return undefined;
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID3 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID4 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const UUID5 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$/;
const DURATION_GO = /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$/;
const DURATION_WORDS =
  /^(\d+\s*(ns|nanoseconds?|us|µs|microseconds?|ms|milliseconds?|s|seconds?|m|minutes?|h|hours?|d|days?|w|weeks?)\s*)+$/;
const HOSTNAME =
  /^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$/u;
const EMAIL = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+$|^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/;
const MAC =
  /^([0-9a-f]{2}([:-])(?:[0-9a-f]{2}\2){4,18}[0-9a-f]{2}|[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}(\.[0-9a-f]{4}){0,3})$/i;
const HEX_COLOR = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const RGB_COLOR = /^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)$/;
const SSN = /^\d{3}[- ]?\d{2}[- ]?\d{4}$/;
const BSON = /^[0-9a-f]{24}$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN_SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const CREDIT_CARD =
  /^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$/;

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = m === 2 ? (leap ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
  return d <= days;
}

function isbn10(value: string): boolean {
  const s = value.replace(/[\s-]/g, "");
  if (!/^\d{9}[\dX]$/.test(s)) return false;
  let sum = 0;
  for (let i = 0; i < 10; i++) sum += (s[i] === "X" ? 10 : Number(s[i])) * (10 - i);
  return sum % 11 === 0;
}

function isbn13(value: string): boolean {
  const s = value.replace(/[\s-]/g, "");
  if (!/^\d{13}$/.test(s)) return false;
  let sum = 0;
  for (let i = 0; i < 13; i++) sum += Number(s[i]) * (i % 2 === 0 ? 1 : 3);
  return sum % 10 === 0;
}

function isCIDR(value: string): boolean {
  const slash = value.indexOf("/");
  if (slash < 0) return false;
  const ip = value.slice(0, slash);
  const bits = value.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  const n = Number(bits);
  if (isIPv4(ip)) return n <= 32;
  if (isIPv6(ip)) return n <= 128;
  return false;
}

function isURI(value: string): boolean {
  // Go's url.ParseRequestURI: an absolute URI or an absolute path.
  if (value.startsWith("/")) return !/\s/.test(value);
  try {
    new URL(value);
    return /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(value);
  } catch {
    return false;
  }
}

/** Whether `value` is valid for a (kept) string format, as the server's format checkers decide. */
export function checkStringFormat(format: string, value: string): boolean {
  switch (format.replaceAll("-", "")) {
    case "datetime": {
      const m = DATE_TIME.exec(value);
      if (!m) return false;
      return (
        validDate(Number(m[1]), Number(m[2]), Number(m[3])) &&
        Number(m[4]) < 24 &&
        Number(m[5]) < 60 &&
        Number(m[6]) < 61
      );
    }
    case "date": {
      const m = DATE.exec(value);
      return m !== null && validDate(Number(m[1]), Number(m[2]), Number(m[3]));
    }
    case "duration":
      return DURATION_GO.test(value) || DURATION_WORDS.test(value);
    case "uuid":
      return UUID.test(value);
    case "uuid3":
      return UUID3.test(value);
    case "uuid4":
      return UUID4.test(value);
    case "uuid5":
      return UUID5.test(value);
    case "ipv4":
      return isIPv4(value);
    case "ipv6":
      return isIPv6(value);
    case "cidr":
      return isCIDR(value);
    case "mac":
      return MAC.test(value);
    case "hostname":
      return value.length <= 255 && HOSTNAME.test(value);
    case "email":
      return EMAIL.test(value);
    case "uri":
      return isURI(value);
    case "byte":
      return BASE64.test(value);
    case "bsonobjectid":
      return BSON.test(value);
    case "isbn":
      return isbn10(value) || isbn13(value);
    case "isbn10":
      return isbn10(value);
    case "isbn13":
      return isbn13(value);
    case "creditcard":
      return CREDIT_CARD.test(value.replace(/\D/g, ""));
    case "ssn":
      return SSN.test(value);
    case "hexcolor":
      return HEX_COLOR.test(value);
    case "rgbcolor": {
      const m = RGB_COLOR.exec(value);
      return m !== null && [m[1], m[2], m[3]].every((c) => Number(c) <= 255);
    }
    case "k8sshortname":
      return value.length <= 63 && DNS_LABEL.test(value);
    case "k8slongname":
      return (
        value.length > 0 &&
        value.length <= 253 &&
        value.split(".").every((s) => DNS_SUBDOMAIN_SEGMENT.test(s))
      );
    default:
      return true;
  }
}
