/**
 * Raised when a value would break the CAPI contract (for example an invalid providerID); the message says
 * which rule and what to do.
 */
export class ContractViolationError extends Error {
  /** The contract rule, e.g. `R8`. */
  readonly rule: string;
  /** Creates the error. */
  constructor(rule: string, message: string) {
    super(`${message} (contract ${rule})`);
    this.name = "ContractViolationError";
    this.rule = rule;
  }
}
