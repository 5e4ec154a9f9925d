/**
 * Escapes free text (a CRD description) for a TSDoc comment: TSDoc/TypeDoc syntax characters are
 * escaped outside code spans, and a comment terminator is broken up everywhere.
 *
 * @param text - the description
 * @returns text safe to place inside a doc comment
 */
export function escapeDocText(text: string): string {
  const parts = text.split("`");
  // An odd number of parts means the backticks are balanced: odd indices are code spans.
  const balanced = parts.length % 2 === 1;
  return parts
    .map((part, index) => {
      const inCode = balanced && index % 2 === 1;
      const escaped = inCode ? part : part.replace(/[\\@{}<>]/g, (ch) => `\\${ch}`);
      return escaped.replaceAll("*/", "*\\/");
    })
    .join("`");
}

/**
 * Renders a doc comment from paragraphs of already escaped text.
 *
 * @param paragraphs - lines or paragraphs (may contain newlines); empty ones are dropped
 * @param indent - indentation of the comment
 * @returns the comment, ending with a newline
 */
export function renderDoc(paragraphs: readonly string[], indent: string): string {
  const lines: string[] = [];
  for (const paragraph of paragraphs) {
    if (paragraph.trim() === "") continue;
    if (lines.length > 0) lines.push("");
    for (const line of paragraph.split("\n")) lines.push(line.trimEnd());
  }
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => (line === "" ? `${indent} *` : `${indent} * ${line}`)).join("\n")}\n${indent} */\n`;
}

/**
 * Splits a Kubernetes description into its text and a deprecation notice, recognising the Go
 * convention of a paragraph starting with "Deprecated:".
 *
 * @param description - the raw description
 * @returns the escaped text and the escaped deprecation notice, if any
 */
export function splitDescription(description: string): {
  text: string;
  deprecated: string | undefined;
} {
  const text = description.trim();
  const paragraphs = text.split(/\n\s*\n/);
  const deprecatedParagraph = paragraphs.find((p) => /^\s*Deprecated:/i.test(p));
  return {
    text: escapeDocText(text),
    deprecated:
      deprecatedParagraph === undefined
        ? undefined
        : escapeDocText(
            deprecatedParagraph.replace(/^\s*Deprecated:\s*/i, "").replace(/\s*\n\s*/g, " "),
          ) || "deprecated",
  };
}
