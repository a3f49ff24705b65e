import { Type } from '@sinclair/typebox';
import fc from 'fast-check';
import t from 'tap';
import { Origin, ParsedToken } from '../../src/routes/redemption.js';
import { isText, jsonObject, plainJson, Text, valueParser } from '../../src/routes/schemas.js';
import { FUZZ_SEED } from '../helpers/fuzzRequests.js';

// A body plainJson accepts (ASCII, no backslash, no DEL) is checked by a second compilation
// of its schema that scans no string for control characters and counts lengths in UTF-16
// units (src/routes/schemas.ts). For any body, spelled in any way, that check must give the
// full check's verdict. No service is needed: this is the checker the routes call.

const Body = Type.Object({
  token: ParsedToken,
  origin: Origin,
  // a lower bound above 1 and short upper bounds, where characters and UTF-16 units part
  name: Type.Optional(Text({ minLength: 2, maxLength: 4 })),
  tags: Type.Optional(Type.Array(Text({ maxLength: 3 }), { maxItems: 3 })),
});
const parse = valueParser(Body, { plainBodies: true });

/** A JSON string literal of `value`: as JSON.stringify writes it, every non-ASCII character escaped, or a DEL left raw. */
function spelled(value: string, how: 'stringify' | 'ascii' | 'raw'): string {
  const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  // eslint-disable-next-line no-control-regex -- what JSON needs escaped
  if (how === 'raw') return `"${value.replace(/[\\"\u0000-\u001f]/g, escape)}"`;
  const text = JSON.stringify(value);
  return how === 'ascii' ? text.replace(/[^ -~]/g, escape) : text;
}

const stringValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 6 }), // any code point, astral ones included
  fc.string({ unit: fc.constantFrom('a', '\u007f', '\u0000', '\t', '\ud800', '\udc00', '😀', 'ş', ' '), maxLength: 6 }),
  fc.constant('a'.repeat(4096)), fc.constant('a'.repeat(4097)), fc.constant(`${'a'.repeat(4095)}😀`),
);
const spelling = fc.constantFrom('stringify', 'ascii', 'raw') as fc.Arbitrary<'stringify' | 'ascii' | 'raw'>;
const field = fc.tuple(stringValue, spelling).map(([v, how]) => spelled(v, how));
const bodyText = fc.record({
  token: fc.option(fc.oneof(field, fc.constant('null'), fc.constant('7')), { nil: undefined }),
  origin: fc.option(fc.oneof(field, fc.constant('null')), { nil: undefined }),
  name: fc.option(field, { nil: undefined }),
  tags: fc.option(fc.array(field, { maxLength: 4 }).map((xs) => `[${xs.join(',')}]`), { nil: undefined }),
}, { requiredKeys: [] }).map((fields) => `{${Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => `"${k}":${v}`).join(',')}}`);

function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => [k, ...stringsOf(v)]);
  return [];
}

t.test('a plain body gets the full check\'s verdict, field and reason', async (t) => {
  let plainBodies = 0;
  let refusedPlain = 0;
  fc.assert(fc.property(bodyText, (text) => {
    const buf = Buffer.from(text, 'utf8');
    const plain = plainJson(buf);
    const full = parse(jsonObject(buf), false);
    const fast = parse(jsonObject(buf), plain);
    if (plain) {
      plainBodies++;
      if (!full.ok) refusedPlain++;
    }
    const verdict = (p: typeof full) => (p.ok ? { ok: true, value: p.value } : { ok: false, field: p.field, keyword: p.error?.keyword, path: p.error?.instancePath });
    t.same(verdict(fast), verdict(full), text.slice(0, 80));
  }), { seed: FUZZ_SEED, numRuns: 2000 });
  // the property means something only if both kinds of plain body came up often
  t.ok(plainBodies > 200 && refusedPlain > 50, `plain bodies: ${plainBodies}, refused: ${refusedPlain}`);
});

t.test('every string of a plain body is text, one UTF-16 unit a character', async (t) => {
  fc.assert(fc.property(bodyText, (text) => {
    const buf = Buffer.from(text, 'utf8');
    if (!plainJson(buf)) return;
    const strings = stringsOf(jsonObject(buf));
    t.ok(strings.every((s) => isText(s) && [...s].length === s.length), text.slice(0, 80));
  }), { seed: FUZZ_SEED, numRuns: 1000 });
});

t.test('which bodies are plain', async (t) => {
  t.ok(plainJson(Buffer.from('{"token":"eyJhbGciOiJIUzI1NiJ9.e30.x","origin":"https://example.com"}')), 'a validate body');
  t.notOk(plainJson(null), 'no body');
  t.notOk(plainJson(Buffer.from('{"origin":"example.com\\t"}')), 'an escape');
  t.notOk(plainJson(Buffer.from('{"origin":"example.com\u007f"}')), 'a raw DEL');
  t.notOk(plainJson(Buffer.from('{"name":"imza sözleşmesi"}')), 'a raw non-ASCII character');
  t.notOk(plainJson(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), 'bytes that are not UTF-8');
  // JSON refuses what a plain body could otherwise carry unescaped
  t.equal(jsonObject(Buffer.from('{"origin":"a\u0001b"}')), null, 'a raw control character is not JSON');
});
