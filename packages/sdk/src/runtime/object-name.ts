/**
 * Checks of object names before they become part of a request path. A name goes into the URL as one
 * path segment; `.` and `..` are resolved away by URL normalisation (a GET of Secret `..` becomes a
 * LIST of the namespace's Secrets, or a GET of the Namespace), and `/` or `%` change which path is
 * meant. client-go refuses these names (`IsValidPathSegmentName`) before sending anything; so do we.
 *
 * @module
 */

/** The longest object name Kubernetes accepts (a DNS subdomain). */
export const MAX_OBJECT_NAME_LENGTH = 253;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A name as it may be quoted in a message: at most 64 characters, JSON-escaped. */
export function quoteName(name: unknown): string {
  if (typeof name !== "string") return typeof name;
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

/**
 * What makes `name` unusable as a path segment (empty, `.`, `..`, containing `/` or `%`, longer than
 * 253 characters); `undefined` when it is usable.
 */
export function pathSegmentNameProblem(name: unknown): string | undefined {
  if (typeof name !== "string" || name === "") return "the name is empty";
  if (name === "." || name === "..") return `the name may not be ${quoteName(name)}`;
  if (name.includes("/")) return `the name ${quoteName(name)} may not contain '/'`;
  if (name.includes("%")) return `the name ${quoteName(name)} may not contain '%'`;
  if (name.length > MAX_OBJECT_NAME_LENGTH) {
    return `the name is longer than ${MAX_OBJECT_NAME_LENGTH} characters`;
  }
  return undefined;
}

/**
 * What makes `name` an invalid Kubernetes object name (a DNS subdomain: lowercase letters, digits,
 * `-` and `.`, at most 253 characters, starting and ending with a letter or digit); `undefined` when
 * it is valid.
 */
export function objectNameProblem(name: unknown): string | undefined {
  const segment = pathSegmentNameProblem(name);
  if (segment) return segment;
  if (!DNS_SUBDOMAIN.test(name as string)) {
    return `the name ${quoteName(name)} is not a valid object name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)`;
  }
  return undefined;
}
