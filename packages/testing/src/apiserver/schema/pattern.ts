import { RE2JS } from "re2js";

/**
 * Compiles a schema `pattern` the way kube-apiserver does: with an RE2 engine, so the pattern has
 * Go's syntax and meaning (`(?i)`, `\A`, `\z`, POSIX classes, no lookaround or backreferences) and
 * matching takes time linear in the input. A backtracking JavaScript RegExp would both accept
 * patterns the server refuses and hang on patterns such as `^(a+)+$`.
 *
 * @throws Error naming the pattern when RE2 cannot compile it (the server refuses such a CRD).
 */
export function compilePattern(pattern: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    throw new Error(
      `pattern ${JSON.stringify(pattern)} does not compile: ${(error as Error).message}`,
    );
  }
}
