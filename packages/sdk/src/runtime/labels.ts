/** One parsed requirement of a label selector. */
interface Requirement {
  key: string;
  operator: "=" | "!=" | "in" | "notin" | "exists" | "!exists";
  values: string[];
}

/** A parsed label selector; `matches` tests a label set. */
export interface LabelSelector {
  /** The selector as written (normalised), usable as a `labelSelector` query parameter. */
  readonly text: string;
  /** True if `labels` satisfies every requirement. */
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
}

const KEY = /^([a-zA-Z0-9.\-_]+\/)?[a-zA-Z0-9]([a-zA-Z0-9.\-_]*[a-zA-Z0-9])?$/;

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key)) {
    throw new SyntaxError(
      `label selector "${selector}": "${key}" is not a valid label key (like app or example.com/app)`,
    );
  }
  return key;
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of selector) {
    if (char === "(") depth++;
    if (char === ")") depth--;
    if (char === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else current += char;
  }
  terms.push(current);
  return terms.map((term) => term.trim()).filter((term) => term !== "");
}

/**
 * Parses a Kubernetes label selector string: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
 * `!a`, comma-separated. Throws a `SyntaxError` naming the bad term.
 *
 * @example
 * ```ts
 * const selector = parseLabelSelector("cluster.x-k8s.io/cluster-name=c1,!paused");
 * selector.matches({ "cluster.x-k8s.io/cluster-name": "c1" }); // true
 * ```
 */
export function parseLabelSelector(selector: string): LabelSelector {
  const requirements: Requirement[] = [];
  for (const term of splitTerms(selector)) {
    const setMatch = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (setMatch) {
      const [, key = "", operator, list = ""] = setMatch;
      requirements.push({
        key: checkKey(key, selector),
        operator: operator as "in" | "notin",
        values: list
          .split(",")
          .map((value) => value.trim())
          .filter((value) => value !== ""),
      });
      continue;
    }
    const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (equality) {
      const [, key = "", operator, value = ""] = equality;
      requirements.push({
        key: checkKey(key, selector),
        operator: operator === "!=" ? "!=" : "=",
        values: [value],
      });
      continue;
    }
    if (term.startsWith("!")) {
      requirements.push({
        key: checkKey(term.slice(1).trim(), selector),
        operator: "!exists",
        values: [],
      });
      continue;
    }
    if (/^\S+$/.test(term)) {
      requirements.push({ key: checkKey(term, selector), operator: "exists", values: [] });
      continue;
    }
    throw new SyntaxError(
      `label selector "${selector}": cannot parse "${term}" (expected key=value, key!=value, key in (a,b), key notin (a), key or !key)`,
    );
  }
  return {
    text: splitTerms(selector).join(","),
    matches(labels) {
      const set = labels ?? {};
      return requirements.every((requirement) => {
        const has = Object.hasOwn(set, requirement.key);
        const value = set[requirement.key];
        switch (requirement.operator) {
          case "=":
            return has && value === requirement.values[0];
          case "!=":
            return !has || value !== requirement.values[0];
          case "in":
            return has && requirement.values.includes(value as string);
          case "notin":
            return !has || !requirement.values.includes(value as string);
          case "exists":
            return has;
          case "!exists":
            return !has;
        }
        return false;
      });
    },
  };
}
