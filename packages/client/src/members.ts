// Whether a JSON text repeats a member name in any of its objects, at any depth, after its
// escapes are decoded ({"a":1,"\u0061":2} repeats "a"). JSON.parse keeps the last of the
// repeated members without a word, and other parsers keep the first: a token that says two
// things is refused rather than read one way here and another way elsewhere.
//
// A reviver cannot see the repeats (JSON.parse hands it the parsed object, repeats already
// merged), and a scanner that decodes every name into a Set per object costs more. So the
// text's members are counted (a string followed by ':' is a name) and compared with the
// members of the parsed value: a repeat merges two members into one, or drops an object
// that was overwritten with all its members, so the count of the value falls short exactly
// when the text repeats a name. About 0.3 µs for a sign token's payload
// (`node dist/bench/jwt.js`).
//
// Part of the client SDK (it verifies license tokens and receipts with it), and the
// server's too (src/tokens/jsonKeys.ts): one implementation, free of Node's modules.

const BACKSLASH = 92;
const COLON = 58;

/** The members of every object of a valid JSON text, counted: strings followed (after whitespace) by ':'; -1 for an unterminated string. */
export function membersInText(text: string): number {
  let members = 0;
  let open = text.indexOf('"');
  while (open >= 0) {
    let close = text.indexOf('"', open + 1);
    // a quote is escaped when an odd number of backslashes precede it
    while (text.charCodeAt(close - 1) === BACKSLASH) {
      let run = close - 1;
      while (text.charCodeAt(run - 1) === BACKSLASH) run--;
      if ((close - run) % 2 === 0) break;
      close = text.indexOf('"', close + 1);
    }
    if (close < 0) return -1; // not JSON: no count matches
    let next = close + 1;
    let c = text.charCodeAt(next);
    while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = text.charCodeAt(++next);
    if (c === COLON) members++;
    open = text.indexOf('"', next);
  }
  return members;
}

/** The members of every object of a parsed JSON value, counted. */
function membersInValue(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let members = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) members += membersInValue(value[i]);
    return members;
  }
  // for-in also counts inherited enumerable properties: a polluted prototype refuses every
  // text (fails closed) rather than hiding a repeat
  for (const name in value) members += 1 + membersInValue((value as Record<string, unknown>)[name]);
  return members;
}

/**
 * True when no object of `text` names a member twice. `value` must be JSON.parse(text):
 * the check relies on the text being valid JSON.
 */
export function hasUniqueMembers(text: string, value: unknown): boolean {
  return membersInText(text) === membersInValue(value);
}

/** The JSON object a text holds, or null: not JSON, not an object, or a member repeated anywhere. */
export function uniqueObjectOf(text: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !hasUniqueMembers(text, value)) return null;
  return value as Record<string, unknown>;
}
