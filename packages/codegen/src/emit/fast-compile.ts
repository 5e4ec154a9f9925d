import type { CompiledModule } from "./compile.js";

// A compiler for the one dialect of TypeScript the generator writes in its `<version>.runtime.ts`
// modules, without the TypeScript compiler: loading and running it for these modules was most of
// the generator's time and memory. The dialect is small and flat: imports; `const` declarations,
// exported with a type annotation or not, whose initialisers are zod-builder calls over JSON
// literals with type arguments (`c.object<t.Name>(…)`, `c.literals<"A" | "B">(…)`); empty
// `export interface X extends t.X {}`; and the Model class template. Anything else (a construct
// this file does not know, a template literal, a regex literal, an arrow function, `as`) makes it
// return undefined, and the caller compiles the module with TypeScript: slower, never wrong. A test
// checks, on every shared CRD, that this path is taken, that the declarations are TypeScript's
// byte for byte, and that TypeScript reads the JavaScript as the same program as its own output.

/** One top-level statement: the comments before it and its code. */
interface Statement {
  readonly comments: string;
  readonly code: string;
}

/** A string literal, double- or single-quoted. */
const STRING = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/y;

/**
 * Splits a module into top-level statements. Strings and comments are skipped as units, so a `;`
 * or a bracket inside them means nothing. Undefined for what the dialect never contains.
 */
function statements(source: string): Statement[] | undefined {
  const out: Statement[] = [];
  let i = 0;
  const n = source.length;
  while (i < n) {
    // Leading trivia: whitespace and comments.
    const triviaStart = i;
    for (;;) {
      while (i < n && /\s/.test(source[i] as string)) i++;
      if (source.startsWith("/*", i)) {
        const end = source.indexOf("*/", i + 2);
        if (end < 0) return undefined;
        i = end + 2;
      } else if (source.startsWith("//", i)) {
        const end = source.indexOf("\n", i);
        i = end < 0 ? n : end + 1;
      } else break;
    }
    const comments = source.slice(triviaStart, i).trim();
    if (i >= n) break;
    const start = i;
    const block = /^export (?:interface|class) /.test(source.slice(start, start + 20));
    let depth = 0;
    let end = -1;
    while (i < n) {
      const ch = source[i] as string;
      if (ch === '"' || ch === "'") {
        STRING.lastIndex = i;
        const m = STRING.exec(source);
        if (m === null) return undefined;
        i += m[0].length;
        continue;
      }
      if (ch === "`") return undefined;
      if (ch === "/") {
        if (source.startsWith("/*", i)) {
          const close = source.indexOf("*/", i + 2);
          if (close < 0) return undefined;
          i = close + 2;
          continue;
        }
        if (source.startsWith("//", i)) {
          const close = source.indexOf("\n", i);
          i = close < 0 ? n : close;
          continue;
        }
        return undefined; // division or a regex literal: not in the dialect
      }
      if (ch === "(" || ch === "[" || ch === "{") depth++;
      else if (ch === ")" || ch === "]" || ch === "}") {
        depth--;
        if (depth < 0) return undefined;
        if (depth === 0 && ch === "}" && block) {
          end = i + 1;
          break;
        }
      } else if (ch === ";" && depth === 0) {
        end = i + 1;
        break;
      }
      i++;
    }
    if (end < 0) return undefined;
    out.push({ comments, code: source.slice(start, end) });
    i = end;
  }
  return out;
}

/**
 * The JavaScript of an initialiser: type argument lists removed, comments dropped. Undefined
 * when its code holds anything else that is TypeScript-only or outside the dialect.
 */
function stripExpression(code: string): string | undefined {
  let out = "";
  let i = 0;
  let last = 0;
  const n = code.length;
  while (i < n) {
    const ch = code[i] as string;
    if (ch === '"' || ch === "'") {
      STRING.lastIndex = i;
      const m = STRING.exec(code);
      if (m === null) return undefined;
      i += m[0].length;
      continue;
    }
    if (ch === "/" && code.startsWith("/*", i)) {
      const close = code.indexOf("*/", i + 2);
      if (close < 0) return undefined;
      out += code.slice(last, i);
      i = close + 2;
      last = i;
      continue;
    }
    if (ch === "/" || ch === "`" || ch === ">" || ch === "?" || ch === "!") return undefined;
    if (ch === "=" && code[i + 1] === ">") return undefined;
    if (ch === "<") {
      // A type argument list (the dialect never compares): skip to its matching ">", which must
      // be followed by the call's "(".
      let depth = 0;
      let j = i;
      while (j < n) {
        const c = code[j] as string;
        if (c === '"' || c === "'") {
          STRING.lastIndex = j;
          const m = STRING.exec(code);
          if (m === null) return undefined;
          j += m[0].length;
          continue;
        }
        if (c === "<") depth++;
        else if (c === ">") {
          depth--;
          if (depth === 0) break;
        } else if (!/[\w$.|&\s,[\]{}:;-]/.test(c)) return undefined;
        j++;
      }
      if (code[j] !== ">" || code[j + 1] !== "(") return undefined;
      out += code.slice(last, i);
      i = j + 1;
      last = i;
      continue;
    }
    if (/[A-Za-z_$]/.test(ch)) {
      const m = /^[\w$]+/.exec(code.slice(i, i + 200)) as RegExpExecArray;
      // A TypeScript-only operator or a function, unless it is a property name or a member.
      const key = /^\s*:/.test(code.slice(i + m[0].length, i + m[0].length + 20));
      const member = code[i - 1] === ".";
      if (!key && !member && ["as", "satisfies", "function", "class", "typeof"].includes(m[0]))
        return undefined;
      i += m[0].length;
      continue;
    }
    i++;
  }
  return out + code.slice(last);
}

const CONST = /^(export )?const ([A-Za-z_$][\w$]*)(?:: ([^=;"']+?))? = ([\s\S]*);$/;
const INTERFACE = /^export interface ([A-Za-z_$][\w$]*) extends (t\.[A-Za-z_$][\w$]*) \{\}$/;
const IMPORT = /^import (type )?(?:\{([^}"']*)\}|\* as ([\w$]+)) from ("[^"\\]*");$/;
const STR = String.raw`"(?:[^"\\\n]|\\.)*"`;
const DOC = String.raw`/\*\* [^\n]* \*/`;
const CLASS = new RegExp(
  String.raw`^export class ([\w$]+) extends Model<(t\.[\w$]+)> \{
  (${DOC})
  static readonly apiVersion = (${STR});
  (${DOC})
  static readonly kind = (${STR});
  (${DOC})
  static readonly is: TypeMetaGuard<\2> = createTypeMetaGuard<\2>\(\1\);

  /\*\*
   \* (@param data - [^\n]*)
   \*/
  constructor\(data\?: ModelData<\2>\) \{
    super\(\);
    this\.setDefinedProps\(\{ apiVersion: \1\.apiVersion, kind: \1\.kind, \.\.\.data \} as ModelData<\2>\);
  \}

  /\*\*
   \* (Checks the object against \{@link [\w$]+\}\.)
   \*
   \* (@throws [^\n]*)
   \*/
  override validate\(\): void \{
    c\.validateOrThrow\(([\w$]+), this\.toJSON\(\), (${STR})\);
  \}
\}$`,
);

/**
 * Compiles a generated runtime module to JavaScript and declarations without the TypeScript
 * compiler, when it is written in the generator's dialect (see the top of this file).
 *
 * @param source - the module, as the generator wrote it
 * @param onRefuse - told why, when the module is outside the dialect (for tests and debugging)
 * @returns the JavaScript and declarations, or undefined when the module is outside the dialect
 */
export function compileRuntimeDialect(
  source: string,
  onRefuse?: (reason: string) => void,
): CompiledModule | undefined {
  const refuse = (reason: string): undefined => {
    onRefuse?.(reason);
    return undefined;
  };
  const parts = statements(source);
  if (parts === undefined) return refuse("a token outside the dialect between statements");
  const js: string[] = [];
  const dts: string[] = [];
  const imports: Array<{
    typeOnly: boolean;
    names: string[];
    star?: string;
    from: string;
    comments: string;
  }> = [];
  const doc = (comments: string) => (comments === "" ? "" : `${comments}\n`);
  for (const { comments, code } of parts) {
    const head = code.slice(0, 80);
    let m = IMPORT.exec(code);
    if (m !== null) {
      const names = (m[2] ?? "")
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name !== "");
      if (!names.every((name) => /^(type )?[A-Za-z_$][\w$]*$/.test(name)))
        return refuse(`import: ${head}`);
      const entry = {
        typeOnly: m[1] !== undefined,
        names,
        from: m[4] as string,
        comments,
        ...(m[3] === undefined ? {} : { star: m[3] }),
      };
      imports.push(entry);
      if (entry.typeOnly) continue;
      const values = names.filter((name) => !name.startsWith("type "));
      if (entry.star !== undefined) js.push(`import * as ${entry.star} from ${entry.from};`);
      else if (values.length > 0) js.push(`import { ${values.join(", ")} } from ${entry.from};`);
      continue;
    }
    m = CONST.exec(code);
    if (m !== null) {
      const [, exported, name, type, init] = m as unknown as [
        string,
        string,
        string,
        string,
        string,
      ];
      const expression = stripExpression(init);
      if (expression === undefined) return refuse(`initialiser: ${head}`);
      js.push(`${exported ?? ""}const ${name} = ${expression};`);
      if (exported !== undefined) {
        if (type === undefined) return refuse(`export without a type: ${head}`);
        dts.push(`${doc(comments)}export declare const ${name}: ${type.trim()};`);
      }
      continue;
    }
    m = INTERFACE.exec(code);
    if (m !== null) {
      dts.push(`${doc(comments)}export interface ${m[1]} extends ${m[2]} {\n}`);
      continue;
    }
    m = CLASS.exec(code);
    if (m !== null) {
      const [
        ,
        model,
        data,
        apiDoc,
        apiVersion,
        kindDoc,
        kind,
        isDoc,
        param,
        checks,
        throws,
        schema,
        subject,
      ] = m as unknown as string[];
      js.push(
        `export class ${model} extends Model {\n` +
          `  static apiVersion = ${apiVersion};\n  static kind = ${kind};\n` +
          `  static is = createTypeMetaGuard(${model});\n` +
          `  constructor(data) {\n    super();\n` +
          `    this.setDefinedProps({ apiVersion: ${model}.apiVersion, kind: ${model}.kind, ...data });\n  }\n` +
          `  validate() {\n    c.validateOrThrow(${schema}, this.toJSON(), ${subject});\n  }\n}`,
      );
      dts.push(
        `${doc(comments)}export declare class ${model} extends Model<${data}> {\n` +
          `    ${apiDoc}\n    static readonly apiVersion = ${apiVersion};\n` +
          `    ${kindDoc}\n    static readonly kind = ${kind};\n` +
          `    ${isDoc}\n    static readonly is: TypeMetaGuard<${data}>;\n` +
          `    /**\n     * ${param}\n     */\n    constructor(data?: ModelData<${data}>);\n` +
          `    /**\n     * ${checks}\n     *\n     * ${throws}\n     */\n    validate(): void;\n}`,
      );
      continue;
    }
    return refuse(`statement: ${head}`);
  }
  // Declarations import only what they use (an unused import fails projects with noUnusedLocals).
  const body = dts.join("\n");
  const used = (name: string) =>
    new RegExp(String.raw`(?<![\w$.])${name.replace(/\$/g, "\\$")}\b`).test(body);
  // An import's comments (the module's doc comment, on the first) go with it, as in TypeScript.
  const head: string[] = [];
  for (const entry of imports) {
    let line: string | undefined;
    if (entry.star !== undefined) {
      if (used(entry.star))
        line = `import ${entry.typeOnly ? "type " : ""}* as ${entry.star} from ${entry.from};`;
    } else {
      const names = entry.names.filter((name) => used(name.replace(/^type /, "")));
      if (names.length > 0)
        line = `import ${entry.typeOnly ? "type " : ""}{ ${names.join(", ")} } from ${entry.from};`;
    }
    if (line !== undefined) head.push(`${doc(entry.comments)}${line}`);
  }
  return { js: `${js.join("\n")}\n`, dts: `${[...head, ...dts].join("\n")}\n` };
}
