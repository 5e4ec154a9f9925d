/**
 * The names the SDK derives from a kind and its group, held to the limits the API server applies to
 * them: a name it would refuse only shows on the first write, as a 422 that leaves a pool without its
 * finalizer or a CRD uninstallable.
 *
 * @module
 */

const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** What one kind derives: its plural, its CRD's name and its finalizer. */
export interface DerivedNames {
  /** The kind, as the author wrote it. */
  readonly kind: string;
  /** Its lower-case plural (`spec.names.plural` of the CRD). */
  readonly plural: string;
  /** The CRD's name, `<plural>.<group>`. */
  readonly crdName: string;
  /** The finalizer the kit puts on its objects, when it has one. */
  readonly finalizer?: string;
}

/**
 * Problems with the derived names, one message each, saying which name, its length, the limit and
 * what to shorten; empty when the API server takes them all.
 */
export function derivedNameProblems(names: DerivedNames): string[] {
  const problems: string[] = [];
  const { kind, plural, crdName, finalizer } = names;
  if (plural.length > 63 || !DNS1035_LABEL.test(plural)) {
    problems.push(
      `the plural "${plural}" of kind ${kind} is ${plural.length} characters; a CRD's plural is a DNS label of at most 63: shorten the kind`,
    );
  }
  if (crdName.length > 253) {
    problems.push(
      `the CRD name "${crdName}" is ${crdName.length} characters; the API server takes at most 253: shorten the group or the kind by ${crdName.length - 253}`,
    );
  }
  if (finalizer !== undefined) {
    // Without a "/", the whole finalizer is a qualified name's name part (the server refuses the
    // object otherwise: "name part must be no more than 63 bytes").
    if (finalizer.length > 63) {
      problems.push(
        `the finalizer "${finalizer}" (<kind>.<group>) is ${finalizer.length} characters; the API server refuses a finalizer without a "/" longer than 63, so every write of a ${kind} would fail: shorten the kind or the group by at least ${finalizer.length - 63} characters (e.g. a shorter kind prefix, or a group such as infrastructure.<short domain>)`,
      );
    } else if (!QUALIFIED_NAME_PART.test(finalizer)) {
      problems.push(
        `the finalizer "${finalizer}" is not a qualified name (alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric one): change the kind or the group`,
      );
    }
  }
  return problems;
}
