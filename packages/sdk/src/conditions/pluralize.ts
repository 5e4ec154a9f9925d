// A port of the rules of Go's github.com/gobuffalo/flect Pluralize, which CAPI uses to name CRDs
// (CalculateCRDName) and in aggregate condition messages. The word lists below are English facts
// (irregular plurals), transcribed as data.

interface Word {
  singular: string;
  plural: string;
  unidirectional?: boolean;
  exact?: boolean;
  alternative?: string;
}

// [singular, plural, flags] where flags: "u" unidirectional, "e" exact, and "=alt" an alternative plural.
const DICTIONARY_DATA = `aircraft aircraft|beef beef =beefs|bison bison|blues blues u|chassis chassis|deer deer|fish fish =fishes|moose moose|police police|salmon salmon =salmons|series series|sheep sheep|shrimp shrimp =shrimps|species species|swine swine =swines|trout trout =trouts|tuna tuna =tunas|you you|child children|ox oxen e|foot feet|goose geese|man men|human humans|louse lice e|mouse mice|tooth teeth|woman women|die dice e|person people|adieu adieux =adieus|fabliau fabliaux|bureau bureaus =bureaux|criterion criteria|ganglion ganglia =ganglions|lexicon lexica =lexicons|mitochondrion mitochondria =mitochondrions|noumenon noumena|phenomenon phenomena|taxon taxa|media media|medium media =mediums u|stadium stadiums =stadia|aquarium aquaria =aquariums|auditorium auditoria =auditoriums|symposium symposia =symposiums|curriculum curriculums =curricula|quota quotas|alumnus alumni =alumnuses|bacillus bacilli|cactus cacti =cactuses|coccus cocci|focus foci =focuses|locus loci =locuses|nucleus nuclei =nucleuses|octopus octupuses =octopi|radius radii =radiuses|syllabus syllabi|corpus corpora =corpuses|genus genera|alumna alumnae|vertebra vertebrae|differentia differentiae|minutia minutiae|vita vitae|larva larvae|postcava postcavae|praecava praecavae|uva uvae|apex apices =apexes|codex codices =codexes|index indices =indexes|latex latices =latexes|vertex vertices =vertexes|vortex vortices =vortexes|appendix appendices =appendixes|radix radices =radixes|helix helices =helixes|axis axes e|crisis crises|ellipsis ellipses u|genesis geneses|oasis oases|thesis theses|testis testes|base bases|basis bases u|alias aliases e|vedalia vedalias|use uses e|abuse abuses|cause causes|clause clauses|cruse cruses|excuse excuses|fuse fuses|house houses|misuse misuses|muse muses|pause pauses|ache aches|topaz topazes|buffalo buffaloes =buffalos|potato potatoes|tomato tomatoes|equipment equipment|information information|jeans jeans|money money|news news|rice rice|dwarf dwarfs =dwarves|hoof hoofs =hooves|thief thieves|chive chives|hive hives|move moves|movie movies|cookie cookies|pretorium pretoriums|agenda agendas|formula formulas =formulae|shoe shoes|toe toes e|graffiti graffiti|ID IDs e`;

const SUFFIX_DATA = `tive tives|eaf eaves|oaf oaves|afe aves|arf arves|rfe rves|rf rves|lf lves|fe ves|ay ays|ey eys|oy oys|quy quies|uy uys|y ies|eau eaux|bula bulae|dula bulae|lula bulae|nula bulae|vula bulae|hedron hedra|ium ia|seum seums|eum ea|oum oa|stracum straca|dum da|elum ela|ilum ila|olum ola|ulum ula|llum lla|ylum yla|imum ima|ernum erna|gnum gna|brum bra|crum cra|terum tera|serum sera|trum tra|antum anta|atum ata|entum enta|etum eta|itum ita|otum ota|utum uta|ctum cta|ovum ova|trix trices|iasis iases|mesis meses|kinesis kineses|resis reses|gnosis gnoses|opsis opses|ysis yses|ouse ouses|lause lauses|us uses|ch ches|io ios|sh shes|ss sses|ez ezzes|iz izzes|tz tzes|zz zzes|ano anos|lo los|to tos|oo oos|o oes|x xes|S Ses`;

const DICTIONARY: Word[] = DICTIONARY_DATA.split("|").map((entry) => {
  const [singular = "", plural = "", ...flags] = entry.split(" ");
  const word: Word = { singular, plural };
  for (const flag of flags) {
    if (flag === "u") word.unidirectional = true;
    else if (flag === "e") word.exact = true;
    else if (flag.startsWith("=")) word.alternative = flag.slice(1);
  }
  return word;
});

const SINGLE_TO_PLURAL = new Map<string, string>();
const PLURAL_TO_SINGLE = new Map<string, string>();
for (const word of DICTIONARY) {
  SINGLE_TO_PLURAL.set(word.singular, word.plural);
  if (!word.unidirectional) {
    PLURAL_TO_SINGLE.set(word.plural, word.singular);
    if (word.alternative) PLURAL_TO_SINGLE.set(word.alternative, word.singular);
  }
}

interface Rule {
  suffix: string;
  replacement: string | undefined; // undefined: keep the word (already plural)
}

// flect builds its rule list by prepending, for each (singular, plural) pair, a no-op rule for the plural
// suffix and then the replacing rule; suffix rules are inserted first (in reverse), dictionary words after.
const RULES: Rule[] = (() => {
  let rules: Rule[] = [];
  const insert = (suffix: string, replacement: string) => {
    rules = [{ suffix: replacement, replacement: undefined }, { suffix, replacement }, ...rules];
  };
  const suffixes = SUFFIX_DATA.split("|").map((e) => e.split(" ") as [string, string]);
  for (let i = suffixes.length - 1; i >= 0; i--) {
    const [singular, plural] = suffixes[i] as [string, string];
    insert(singular, plural);
  }
  for (const word of DICTIONARY) {
    if (word.exact) continue;
    insert(word.singular, word.plural);
  }
  return rules;
})();

const isUpper = (c: string) => c !== c.toLowerCase() && c === c.toUpperCase();
const SEPARATORS = new Set(["_", " ", ":", "-", "/"]);

/** The last word of an identifier, split like flect (camel-case humps and separators; acronyms not split). */
function lastPart(s: string): string {
  let parts: string[] = [];
  let current = "";
  let prev = "";
  const flush = () => {
    const trimmed = current.trim();
    if (trimmed) parts = [...parts, trimmed];
    current = "";
  };
  for (const c of s.trim()) {
    if (SEPARATORS.has(c) || /\s/.test(c)) {
      flush();
      prev = c;
      continue;
    }
    if (isUpper(c) && !isUpper(prev)) {
      flush();
      current = c;
      prev = c;
      continue;
    }
    current += c;
    prev = c;
  }
  flush();
  return parts[parts.length - 1] ?? "";
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function replaceSuffix(original: string, suffix: string, replacement: string): string {
  return (
    (original.endsWith(suffix) ? original.slice(0, original.length - suffix.length) : original) +
    replacement
  );
}

/**
 * English plural of a word or camel-case identifier, following Go's `flect.Pluralize` (used by CAPI for CRD
 * names and condition messages): irregular words, suffix rules, words already plural are kept, else `+s`.
 *
 * @example
 * ```ts
 * pluralize("foomachinepool"); // "foomachinepools"
 * pluralize("MachineDeployment"); // "MachineDeployments"
 * pluralize("policy"); // "policies"
 * ```
 */
export function pluralize(word: string): string {
  const last = lastPart(word);
  if (last.length === 0) return "";
  const direct = SINGLE_TO_PLURAL.get(word);
  if (direct !== undefined) return replaceSuffix(word, word, direct);
  if (PLURAL_TO_SINGLE.has(word)) return word;
  const lower = last.toLowerCase();
  if (PLURAL_TO_SINGLE.has(lower)) return word;
  const dictionaryPlural = SINGLE_TO_PLURAL.get(lower);
  if (dictionaryPlural !== undefined) {
    const plural = last === capitalize(last) ? capitalize(dictionaryPlural) : dictionaryPlural;
    return replaceSuffix(word, last, plural);
  }
  for (const rule of RULES) {
    if (last.endsWith(rule.suffix)) {
      if (rule.replacement === undefined) return word;
      const pluralLast = last.slice(0, last.length - rule.suffix.length) + rule.replacement;
      return replaceSuffix(word, last, pluralLast);
    }
  }
  if (lower.endsWith("s")) return word;
  return `${word}s`;
}
