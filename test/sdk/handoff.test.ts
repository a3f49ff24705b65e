import { deepStrictEqual, match } from 'node:assert/strict';
import fc from 'fast-check';
import { decodeHandoff, encodeHandoff, HandoffError, type Handoff, type HandoffProblem } from '@license-service/client';
import t from 'tap';
import { FUZZ_SEED } from '../helpers/fuzz.js';

// The desktop hand-off payload (docs/api.md, Endpoints; packages/client/src/handoff.ts):
// {data: JSON{SignMethod, Data: JSON{Token, PinCode, XmlFile}}}. The encoder writes exactly
// that shape, the decoder gives back what was encoded whatever the strings hold, and on any
// other input throws nothing but a HandoffError naming the field and the problem.

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const settings = { seed: FUZZ_SEED, numRuns: RUNS };

/** Any UTF-16 string: lone surrogates, NUL, quotes and backslashes included. */
const utf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 });
/** Any string of code points, astral ones included. */
const unicode = fc.string({ unit: 'binary', maxLength: 40 });
const anyString = fc.oneof(utf16, unicode, fc.string({ unit: 'grapheme', maxLength: 20 }));

const handoff: fc.Arbitrary<Handoff> = fc.record({
  signMethod: fc.oneof(fc.constantFrom(0, 1), fc.maxSafeInteger(), fc.integer()),
  token: anyString,
  pinCode: anyString,
  xmlFile: fc.array(anyString, { maxLength: 5 }),
}).map((r) => ({ ...r })); // fast-check's records have no prototype

/** The problem and path of the HandoffError a call throws; null when it does not throw. */
function problemOf(decode: () => unknown): [HandoffProblem, string] | null {
  try {
    decode();
    return null;
  } catch (err) {
    if (!(err instanceof HandoffError)) throw err;
    return [err.problem, err.path];
  }
}

t.test('the published shape: data a JSON string of {SignMethod, Data}, Data a JSON string of {Token, PinCode, XmlFile}', async (t) => {
  const payload = encodeHandoff({ signMethod: 1, token: 'eyJ.a.b', pinCode: '', xmlFile: ['<e:Reçete/>', '<b/>'] });
  t.same(Object.keys(payload), ['data'], 'one field');
  t.type(payload.data, 'string');
  const outer = JSON.parse(payload.data);
  t.strictSame(Object.keys(outer), ['SignMethod', 'Data']);
  t.equal(outer.SignMethod, 1, 'SignMethod an integer');
  t.type(outer.Data, 'string', 'Data a string');
  t.strictSame(JSON.parse(outer.Data), { Token: 'eyJ.a.b', PinCode: '', XmlFile: ['<e:Reçete/>', '<b/>'] });
  t.equal(payload.data, '{"SignMethod":1,"Data":"{\\"Token\\":\\"eyJ.a.b\\",\\"PinCode\\":\\"\\",\\"XmlFile\\":[\\"<e:Reçete/>\\",\\"<b/>\\"]}"}', 'byte for byte');
});

t.test('property: decode(encode(x)) is x, from the object and from its JSON text', async (t) => {
  fc.assert(fc.property(handoff, (x) => {
    const payload = encodeHandoff(x);
    deepStrictEqual(decodeHandoff(payload), x);
    deepStrictEqual(decodeHandoff(JSON.stringify(payload)), x);
    deepStrictEqual(decodeHandoff(JSON.parse(JSON.stringify(payload))), x);
  }), settings);
  t.pass(`${RUNS} hand-offs round-trip (FUZZ_SEED=${FUZZ_SEED})`);
});

/** Garbage of every kind: any value, any text, any JSON, and payloads broken one level down. */
const garbage = fc.oneof(
  fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withNullPrototype: true }),
  anyString,
  fc.json(),
  fc.jsonValue().map((v) => ({ data: v })),
  fc.jsonValue().map((v) => ({ data: JSON.stringify(v) })),
  fc.record({ SignMethod: fc.jsonValue(), Data: fc.oneof(fc.jsonValue(), fc.jsonValue().map((v) => JSON.stringify(v))) }, { requiredKeys: [] })
    .map((v) => ({ data: JSON.stringify(v) })),
  fc.record({
    SignMethod: fc.oneof(fc.integer(), fc.jsonValue()),
    Data: fc.record({ Token: fc.jsonValue(), PinCode: fc.jsonValue(), XmlFile: fc.oneof(fc.array(fc.jsonValue()), fc.jsonValue()) }, { requiredKeys: [] })
      .map((v) => JSON.stringify(v)),
  }).map((v) => ({ data: JSON.stringify(v) })),
  handoff.chain((x) => fc.nat({ max: 200 }).map((cut) => JSON.stringify(encodeHandoff(x)).slice(0, cut))),
);

t.test('property: garbage never throws anything but a HandoffError', async (t) => {
  fc.assert(fc.property(garbage, (value) => {
    const found = problemOf(() => decodeHandoff(value));
    if (found !== null) match(found[1], /^(payload|data(\.SignMethod|\.Data(\.(Token|PinCode|XmlFile(\[\d+\])?))?)?)$/);
  }), settings);
  // everything that does decode is a well-typed Handoff
  fc.assert(fc.property(garbage, (value) => {
    try {
      const h = decodeHandoff(value);
      return Number.isSafeInteger(h.signMethod) && typeof h.token === 'string' && typeof h.pinCode === 'string'
        && Array.isArray(h.xmlFile) && h.xmlFile.every((x) => typeof x === 'string');
    } catch (err) {
      return err instanceof HandoffError;
    }
  }), settings);
  t.pass(`${RUNS} garbage values, twice (FUZZ_SEED=${FUZZ_SEED})`);
});

t.test('each problem is named with its field', async (t) => {
  const nested = (outer: unknown) => ({ data: JSON.stringify(outer) });
  const doc = (inner: unknown) => nested({ SignMethod: 0, Data: JSON.stringify(inner) });
  const cases: [string, unknown, HandoffProblem, string][] = [
    ['text that is not JSON', '{"data":', 'NOT_JSON', 'payload'],
    ['an array', [], 'NOT_AN_OBJECT', 'payload'],
    ['null', null, 'NOT_AN_OBJECT', 'payload'],
    ['no data', {}, 'MISSING_FIELD', 'data'],
    ['data an object, not a string', { data: { SignMethod: 0, Data: '{}' } }, 'WRONG_TYPE', 'data'],
    ['data not JSON', { data: '{SignMethod:0}' }, 'NESTED_JSON', 'data'],
    ['data JSON but a number', { data: '42' }, 'NOT_AN_OBJECT', 'data'],
    ['no SignMethod', nested({ Data: '{}' }), 'MISSING_FIELD', 'data.SignMethod'],
    ['SignMethod a string', nested({ SignMethod: '0', Data: '{}' }), 'WRONG_TYPE', 'data.SignMethod'],
    ['SignMethod a fraction', nested({ SignMethod: 0.5, Data: '{}' }), 'WRONG_TYPE', 'data.SignMethod'],
    ['SignMethod past 2^53', nested({ SignMethod: 2 ** 60, Data: '{}' }), 'WRONG_TYPE', 'data.SignMethod'],
    ['no Data', nested({ SignMethod: 0 }), 'MISSING_FIELD', 'data.Data'],
    ['Data an object', nested({ SignMethod: 0, Data: { Token: 't' } }), 'WRONG_TYPE', 'data.Data'],
    ['Data broken JSON', nested({ SignMethod: 0, Data: '{"Token":' }), 'NESTED_JSON', 'data.Data'],
    ['Data a JSON array', nested({ SignMethod: 0, Data: '[]' }), 'NOT_AN_OBJECT', 'data.Data'],
    ['no Token', doc({ PinCode: '', XmlFile: [] }), 'MISSING_FIELD', 'data.Data.Token'],
    ['Token null', doc({ Token: null, PinCode: '', XmlFile: [] }), 'WRONG_TYPE', 'data.Data.Token'],
    ['no PinCode', doc({ Token: 't', XmlFile: [] }), 'MISSING_FIELD', 'data.Data.PinCode'],
    ['PinCode a number', doc({ Token: 't', PinCode: 1234, XmlFile: [] }), 'WRONG_TYPE', 'data.Data.PinCode'],
    ['no XmlFile', doc({ Token: 't', PinCode: '' }), 'MISSING_FIELD', 'data.Data.XmlFile'],
    ['XmlFile a string', doc({ Token: 't', PinCode: '', XmlFile: '<a/>' }), 'WRONG_TYPE', 'data.Data.XmlFile'],
    ['an XmlFile entry not a string', doc({ Token: 't', PinCode: '', XmlFile: ['<a/>', 7] }), 'WRONG_TYPE', 'data.Data.XmlFile[1]'],
  ];
  for (const [what, payload, problem, path] of cases) t.same(problemOf(() => decodeHandoff(payload)), [problem, path], what);
  t.strictSame(decodeHandoff(doc({ Token: 't', PinCode: '', XmlFile: [], Extra: 1 })), { signMethod: 0, token: 't', pinCode: '', xmlFile: [] },
    'fields the format does not name are ignored');
});

t.test('size limits: the decoder refuses oversized input before parsing it, the encoder never writes it', async (t) => {
  const limits = { maxDataLength: 200, maxXmlFiles: 2, maxTokenLength: 10, maxPinCodeLength: 4 };
  const ok: Handoff = { signMethod: 0, token: 'short', pinCode: '1234', xmlFile: ['<a/>', '<b/>'] };
  t.strictSame(decodeHandoff(encodeHandoff(ok, limits), limits), ok, 'within the limits');
  const over: [string, Handoff, string][] = [
    ['a long token', { ...ok, token: 'x'.repeat(11) }, 'Token'],
    ['a long PIN', { ...ok, pinCode: '12345' }, 'PinCode'],
    ['three documents', { ...ok, xmlFile: ['<a/>', '<b/>', '<c/>'] }, 'XmlFile'],
  ];
  for (const [what, h, field] of over) {
    t.equal(problemOf(() => encodeHandoff(h, limits))?.[0], 'TOO_LARGE', `encoder: ${what}`);
    t.same(problemOf(() => decodeHandoff(encodeHandoff(h), limits)), ['TOO_LARGE', `data.Data.${field}`], `decoder: ${what}`);
  }
  const big: Handoff = { ...ok, xmlFile: ['<a>' + 'ç'.repeat(300) + '</a>'] };
  t.same(problemOf(() => encodeHandoff(big, limits)), ['TOO_LARGE', 'data'], 'encoder: data over maxDataLength');
  t.same(problemOf(() => decodeHandoff(encodeHandoff(big), limits)), ['TOO_LARGE', 'data'], 'decoder: data over maxDataLength');
  t.same(problemOf(() => decodeHandoff(' '.repeat(200 * 6 + 65), limits)), ['TOO_LARGE', 'payload'], 'decoder: text too long to be a payload');
  t.same(problemOf(() => encodeHandoff({ ...ok, signMethod: 1.5 })), ['WRONG_TYPE', 'signMethod'], 'encoder: a fraction');
  t.same(problemOf(() => encodeHandoff({ ...ok, xmlFile: 'x' as unknown as string[] })), ['WRONG_TYPE', 'xmlFile'], 'encoder: not an array');
});
