/** Where in the input a problem was found. */
export interface InputLocation {
  /** The input file (as given), "<stdin>", or the cluster the CRD came from. */
  readonly source: string;
  /** Zero-based index of the YAML document in the file (and of the item, for a List). */
  readonly document?: number | undefined;
  /** The CRD version being generated, e.g. "v1beta2". */
  readonly version?: string | undefined;
  /** JSON path of the offending node inside the document, e.g. "spec.versions[1].schema.openAPIV3Schema". */
  readonly path?: string | undefined;
}

/**
 * A problem with the generator's input: broken YAML, a document that is not a CRD, a version
 * without a schema, or a schema construct that cannot be mapped. The message names the file,
 * document, version and JSON path, and says what to do.
 *
 * @example
 * try {
 *   await generate({ inputs: ["crds/"] });
 * } catch (error) {
 *   if (error instanceof CodegenError) console.error(error.message);
 * }
 */
export class CodegenError extends Error {
  /** Where the problem is. */
  readonly location: InputLocation;
  /** The problem, without the location. */
  readonly problem: string;

  /**
   * @param location - where the problem is
   * @param problem - what is wrong and what to do about it
   */
  constructor(location: InputLocation, problem: string) {
    super(`${formatLocation(location)}: ${problem}`);
    this.name = "CodegenError";
    this.location = location;
    this.problem = problem;
  }
}

function formatLocation(location: InputLocation): string {
  const parts: string[] = [];
  if (location.document !== undefined) parts.push(`document ${location.document}`);
  if (location.version !== undefined) parts.push(`version ${location.version}`);
  if (location.path !== undefined && location.path !== "") parts.push(`at ${location.path}`);
  return parts.length === 0 ? location.source : `${location.source} (${parts.join(", ")})`;
}
