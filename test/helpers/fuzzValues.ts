import fc, { type Arbitrary } from 'fast-check';
import { type Body, Cat, Crafted, type FV, Pairs, Raw, Real, type RealKind, Rel, type Tpl } from './fuzzRequests.js';
import { HS256_HEADER, ISSUER } from './jwt.js';

// Fuzzing (test/system/fuzz.test.ts), part 2: generators of hostile values, bodies, headers and
// path segments.

// ---- generators -----------------------------------------------------------------------------

const code = (min: number, max: number): Arbitrary<string> => fc.integer({ min, max }).map((c) => String.fromCharCode(c));

/** C0 controls, DEL and C1 controls. */
export const controlChar: Arbitrary<string> = fc.oneof(code(0, 0x1f), fc.constant('\u007f'), code(0x80, 0x9f), fc.constant('\u0000'));
export const loneSurrogate: Arbitrary<string> = fc.oneof(code(0xd800, 0xdbff), code(0xdc00, 0xdfff));
const specialChar: Arbitrary<string> = fc.constantFrom(
  '\u0000', '\u2028', '\u2029', '\ufeff', '\ufffe', '\uffff', '\u202e', '\u200b', '\u0301', 'İ', 'ı', 'ß', 'ǅ', 'ﬀ',
  '😀', '\u{10ffff}', '%', '|', '"', '\\', "'", '/', '..', '*', ',', ';', '=', '&', '?', '#', ' ', '\t', '\r\n', '{', '}',
);

const piece: Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 2, arbitrary: controlChar },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: specialChar },
);

/** Dates the service may trust too much: leap seconds, hour 24, far years, odd offsets. */
export const DATE_STRINGS = [
  '2030-12-31T23:59:60Z', '2030-06-30T23:59:60+00:00', '2030-12-31T24:00:00Z', '2030-02-30T00:00:00Z', '2030-13-01T00:00:00Z',
  '0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '1969-12-31T23:59:59Z', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z',
  '+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z', '2030-12-31T23:59:59+14:00', '2030-12-31T23:59:59-23:59',
  '2030-12-31T23:59:59+99:99', '2030-12-31t23:59:59z', '2030-12-31 23:59:59Z', '2030-12-31T23:59:59.999999999999Z',
  '2030-12-31T23:59:59', '2030-12-31', '2030-12-31T23:59:59Z\u0000', ' 2030-12-31T23:59:59Z', 'infinity', '-infinity',
  'epoch', 'now', 'today', 'allballs', 'Tue, 31 Dec 2030 23:59:59 GMT', '1', '0', '-1', '2030', '1e308',
  '9999-12-31T23:59:59-01:00', '1970-01-01T00:30:00+01:00',
];

export const SPECIAL_STRINGS = [
  '', ' ', '  ', '\u0000', 'a\u0000b', '\u0000\u0000\u0000', '\n', '\r\n', '\t', '\u001b[31m', '\u007f', '\u0085',
  '\ud800', '\udfff', 'a\udc00b', '\udbff\udbff', '\ufeff', 'null', 'undefined', 'NaN', '-NaN', 'Infinity', '-Infinity',
  '-0', '0', '1', '-1', '0x10', '1e308', '1e309', 'true', 'false', '[]', '{}', '%00', '%ff', '%', '..', '../..', '/',
  '__proto__', 'constructor', 'prototype', "' OR '1'='1", '"; drop table licenses; --', '$1', '${7*7}', '{{7*7}}',
  '<script>alert(1)</script>', '\\u0000', 'Bearer', 'Bearer x', 'lic:{0}:x', '{0}', '*', '\\', '"', "'", ',', '|',
  'İ', 'ı', 'Örnek Sağlık A.Ş.', '😀', '\u202e', 'x'.repeat(129), 'x'.repeat(1025), ...DATE_STRINGS,
];

const huge: Arbitrary<string> = fc
  .tuple(piece, fc.integer({ min: 256, max: 4096 }))
  .map(([s, n]) => {
    const unit = s === '' ? 'x' : s;
    return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
  });

export const nastyString: Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.array(piece, { maxLength: 8 }).map((p) => p.join('')) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 1, arbitrary: huge },
);

export const RAW_NUMBERS = [
  '-0', '-0.0', '0.0', '1.0', '1E0', '1e0', '0e0', '1e308', '-1e308', '1e309', '-1e309', '5e-324', '1e-400',
  '9007199254740993', '123456789012345678901234567890', '-123456789012345678901234567890', '1.5e2', '1e12', '1000000000001',
];

export const nastyNumber: Arbitrary<FV> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, 1, -1, 2, 0.5, 1.0000001, 1e12, 1e12 + 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER,
    Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE),
  fc.constantFrom(...RAW_NUMBERS).map((t) => new Raw(t)),
);

/** Deeply nested arrays and objects, written as raw text (up to about 9 KB). */
export const deepValue: Arbitrary<FV> = fc
  .tuple(fc.integer({ min: 2, max: 1500 }), fc.boolean())
  .map(([n, arrays]) => new Raw(arrays ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}null${'}'.repeat(n)}`));

export const keyArb: Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', '\u0000', 'token', 'origin',
    'licenseKey', 'password', 'imzaTipi', 'add', 'isActive', 'domains', 'organizationName', 'expiryDate', 'totalQuota',
    'firma_id', 'success', 'Token', 'LICENSEKEY'),
);

const { value: fuzzValueArb } = fc.letrec<{ value: FV }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    { weight: 5, arbitrary: nastyString },
    { weight: 3, arbitrary: nastyNumber },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: deepValue },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) as Arbitrary<FV> },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(keyArb, tie('value'), { maxKeys: 4 }) },
  ),
}));

/** Any JSON value: every type, hostile strings and numbers, nesting. */
export const fuzzValue: Arbitrary<FV> = fuzzValueArb;

const injected: Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: controlChar },
  { weight: 2, arbitrary: loneSurrogate },
  { weight: 1, arbitrary: specialChar },
);

/** A plausible value with a control character, lone surrogate or odd character put in somewhere. */
export function tainted(arb: Arbitrary<FV>): Arbitrary<FV> {
  return fc.tuple(arb, injected, fc.nat()).map(([v, c, at]) => {
    if (typeof v === 'string') {
      const i = at % (v.length + 1);
      return v.slice(0, i) + c + v.slice(i);
    }
    if (v instanceof Real || v instanceof Cat || v instanceof Crafted) return at % 2 === 0 ? new Cat([v, c]) : new Cat([c, v]);
    return v;
  });
}

/** A field: a plausible value (three times in five), the same tainted, or anything at all. */
export function field(...plausible: Arbitrary<FV>[]): Arbitrary<FV> {
  const p = fc.oneof(...plausible);
  return fc.oneof({ weight: 3, arbitrary: p }, { weight: 1, arbitrary: tainted(p) }, { weight: 1, arbitrary: fuzzValue });
}

/** A field that is tainted or anything at all only now and then: for records of many fields. */
export function mostly(...plausible: Arbitrary<FV>[]): Arbitrary<FV> {
  const p = fc.oneof(...plausible);
  return fc.oneof({ weight: 8, arbitrary: p }, { weight: 1, arbitrary: tainted(p) }, { weight: 1, arbitrary: fuzzValue });
}

export const real = (kind: RealKind): Arbitrary<Real> => fc.constant(new Real(kind));

/** A JSON object from a model of fields: all present, some missing, extra keys, duplicate keys. */
export function objectOf(model: Record<string, Arbitrary<FV>>): Arbitrary<FV> {
  const full = fc.record(model) as Arbitrary<Record<string, FV>>;
  const partial = fc.record(model, { requiredKeys: [] }) as Arbitrary<Record<string, FV>>;
  const extras = fc.dictionary(keyArb, fuzzValue, { maxKeys: 3 });
  const names = Object.keys(model);
  return fc.oneof(
    { weight: 10, arbitrary: full },
    { weight: 2, arbitrary: partial },
    { weight: 1, arbitrary: fc.tuple(full, extras).map(([f, e]) => ({ ...e, ...f })) },
    {
      weight: 1,
      arbitrary: fc.tuple(full, fc.constantFrom(...names), fuzzValue)
        .map(([f, name, v]) => new Pairs([...Object.entries(f), [name, v]])),
    },
  );
}

/**
 * A valid object with at most one field gone wrong: hostile (as given, else tainted or anything
 * at all) or missing. Every field's check is reached this way, and so is the code behind them.
 */
export function oneBad(valid: Record<string, Arbitrary<FV>>, hostile: Record<string, Arbitrary<FV>> = {}): Arbitrary<FV> {
  const names = Object.keys(valid);
  const badOf = (name: string): Arbitrary<FV> =>
    fc.oneof(...(hostile[name] ? [hostile[name]] : []), tainted(valid[name] as Arbitrary<FV>), fuzzValue);
  return fc.record(valid).chain((base) => fc.oneof(
    { weight: 1, arbitrary: fc.constant<FV>(base) },
    { weight: 4, arbitrary: fc.constantFrom(...names).chain((name) => badOf(name).map((v): FV => ({ ...base, [name]: v }))) },
    { weight: 1, arbitrary: fc.constantFrom(...names).map((name): FV => Object.fromEntries(Object.entries(base).filter(([k]) => k !== name))) },
  ));
}

/** Text that is not quite a JSON object. */
const notJson: Arbitrary<string> = fc.oneof(
  fc.constantFrom('', ' ', '{', '}', '{"a":', '{"token":', 'nul', '[1,]', '{"token":"x",}', '\ufeff{}', ' {} ', '{}{}',
    '{} x', "{'token':'x'}", '{token:"x"}', '{"token":"x"', '\u0000', 'NaN', 'Infinity', '-', '"', '{"\\ud800":1}',
    '{"a":"\\u0000"}', '{"a":"\\x00"}', '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":+1}', '{"a":0x1}', '[[[[[[[[[['),
  nastyString,
);

/**
 * A request body: mostly a JSON object from the model (and, given `valid`, as often an object
 * from it: oneBad), otherwise any JSON, text, raw bytes, nothing, or too much.
 */
export function bodyOf(model: Record<string, Arbitrary<FV>>, oversize = true, valid?: Arbitrary<FV>): Arbitrary<Body> {
  const arbitraries: { weight: number; arbitrary: Arbitrary<Body> }[] = [
    { weight: 20, arbitrary: objectOf(model).map((value) => ({ kind: 'json' as const, value })) },
    { weight: 2, arbitrary: fuzzValue.map((value) => ({ kind: 'json' as const, value })) },
    { weight: 1, arbitrary: notJson.map((text) => ({ kind: 'text' as const, text })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 1024 }).map((bytes) => ({ kind: 'bytes' as const, bytes })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  ];
  if (valid) arbitraries.push({ weight: 20, arbitrary: valid.map((value) => ({ kind: 'json' as const, value })) });
  if (oversize) {
    const names = Object.keys(model);
    arbitraries.push({
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...names), fc.integer({ min: 8000, max: 12000 }))
        .map(([name, n]) => ({ kind: 'json' as const, value: { [name]: 'x'.repeat(n) } })),
    });
  }
  return fc.oneof(...arbitraries);
}

/** Characters an HTTP client can put in a header value (Node refuses the others). */
const headerChar: Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: code(0x20, 0x7e) },
  { weight: 1, arbitrary: fc.constant('\t') },
  { weight: 1, arbitrary: code(0x80, 0xff) },
);
export const headerText: Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: headerChar, maxLength: 64 }) },
  { weight: 1, arbitrary: fc.string({ unit: headerChar, minLength: 200, maxLength: 1000 }) },
  { weight: 2, arbitrary: fc.constantFrom('', ' ', 'null', 'Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'a.b.c',
    'eyJhbGciOiJub25lIn0.e30.', '%00', '..', '\u00ff\u00fe') },
);

/** Random JWT-looking text. */
const jwtish: Arbitrary<string> = fc
  .array(fc.base64String({ maxLength: 60 }).map((s) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')), { minLength: 1, maxLength: 4 })
  .map((parts) => parts.join('.'));

const rel = (min: number, max: number): Arbitrary<FV> => fc.integer({ min, max }).map((s) => new Rel(s));

/** A JWT crafted by hand: plausible claims (some signed with the real secret) or anything. */
export function craftedJwt(firmaIds: Arbitrary<FV>): Arbitrary<Crafted> {
  const header = fc.oneof(
    { weight: 6, arbitrary: fc.constant<FV>(HS256_HEADER) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<FV>({ alg: 'none', typ: 'JWT' }, { alg: 'HS512', typ: 'JWT' }, { alg: 'RS256' }, { alg: 'hs256' },
        { alg: 'HS256', kid: '../../../dev/null' }, { alg: 'HS256', crit: ['exp'] }, { alg: 'HS256', typ: 'JWT', jku: 'http://x' }, {},
        { alg: 'HS256', typ: 'JWT' }, { typ: 'JWT', alg: 'HS256', kid: 'default' }, { alg: 'HS256', typ: 'JWT', kid: 'retired' }),
    },
    { weight: 1, arbitrary: fuzzValue },
  );
  const claimsModel: Record<string, Arbitrary<FV>> = {
    typ: mostly(fc.constantFrom('sign', 'access')),
    firma_id: mostly(firmaIds, fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/)),
    firma_adi: mostly(fc.constant('Fuzz A.Ş.'), nastyString),
    token_id: mostly(fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/)),
    imza_tipi: mostly(fc.constantFrom(0, 1)),
    iat: mostly(rel(-30, 0), rel(-2000, 2000), nastyNumber),
    exp: mostly(rel(1, 300), rel(-1000, 2000), nastyNumber),
    iss: mostly(fc.constant(ISSUER), nastyString),
    gen: mostly(fc.constant(0), nastyNumber),
  };
  const claims = fc.oneof({ weight: 5, arbitrary: objectOf(claimsModel) }, { weight: 1, arbitrary: fuzzValue });
  return fc
    .record({
      header,
      claims,
      key: fc.oneof({ weight: 6, arbitrary: fc.constant('real' as const) }, { weight: 1, arbitrary: fc.constantFrom('wrong' as const, 'empty' as const) }),
      hash: fc.oneof({ weight: 8, arbitrary: fc.constant('sha256' as const) }, { weight: 1, arbitrary: fc.constantFrom('sha512' as const, 'none' as const) }),
      mangle: fc.oneof(
        { weight: 8, arbitrary: fc.constant('none' as const) },
        { weight: 1, arbitrary: fc.constantFrom('extra-part' as const, 'no-signature' as const, 'trailing-dot' as const, 'padded' as const, 'spaces' as const, 'two-tokens' as const) },
      ),
    })
    .map((spec) => new Crafted(spec));
}

/** A token-ish string: real ones, crafted ones, random text. */
export function tokenOf(reals: Arbitrary<Tpl>, crafted: Arbitrary<Crafted>): Arbitrary<Tpl> {
  return fc.oneof(
    { weight: 5, arbitrary: reals },
    { weight: 3, arbitrary: crafted },
    { weight: 1, arbitrary: jwtish },
    { weight: 1, arbitrary: fc.tuple(reals, fc.constantFrom('x', '.', '=', 'A', '\u0000')).map(([r, s]) => new Cat([r, s])) },
    { weight: 1, arbitrary: headerText },
  );
}

/** An Authorization header: Bearer with a real token (mostly), crafted tokens, odd schemes, random text, none. */
export function authorizationOf(reals: Arbitrary<Tpl>, token: Arbitrary<Tpl>): Arbitrary<Tpl | undefined> {
  return fc.oneof(
    { weight: 10, arbitrary: reals.map((tk) => new Cat(['Bearer ', tk])) },
    { weight: 6, arbitrary: token.map((tk) => new Cat(['Bearer ', tk])) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom('bearer ', 'BEARER ', 'Bearer  ', 'Bearer\t', 'Bearer', ' Bearer ', 'Basic ', 'Token ', ''), token,
        fc.constantFrom('', ' ', '  x', ',Bearer x', '\t')).map(([a, tk, b]) => new Cat([a, tk, b])),
    },
    { weight: 1, arbitrary: headerText.map((s) => `Bearer ${s}`) },
    { weight: 1, arbitrary: headerText },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const ipish: Arbitrary<string> = fc.oneof(
  fc.ipV4(), fc.ipV6(), fc.ipV4Extended(),
  fc.array(fc.ipV4(), { minLength: 2, maxLength: 5 }).map((a) => a.join(', ')),
  fc.constantFrom('unknown', '127.0.0.1, 10.0.0.1', '::1', '[::1]:80', '999.999.999.999', '1.1.1.1,,,', ',', '0', '-1'),
);

/** X-Forwarded-For, Content-Type and other headers a client may send. */
export function commonHeaders(): Arbitrary<Record<string, Tpl | undefined>> {
  return fc.record(
    {
      'content-type': fc.oneof(
        { weight: 6, arbitrary: fc.constant('application/json') },
        {
          weight: 2,
          arbitrary: fc.constantFrom('text/plain', 'application/json; charset=utf-16', 'application/json; charset=latin1',
            'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'APPLICATION/JSON', '', '*/*'),
        },
        { weight: 1, arbitrary: headerText },
      ),
      'x-forwarded-for': fc.oneof(ipish, headerText),
      'x-real-ip': headerText,
      origin: fc.oneof(fc.webUrl(), headerText),
      'idempotency-key': fc.oneof(fc.stringMatching(/^[\x21-\x7e]{1,40}$/), headerText),
      'access-control-request-method': fc.constantFrom('POST', 'GET', 'DELETE', ''),
      'accept-encoding': fc.constantFrom('gzip', 'br, gzip, deflate', '*', 'identity;q=0'),
    },
    { requiredKeys: [] },
  );
}

/** Bytes as %XX escapes (invalid UTF-8, %00, %ff included). */
const percentBytes: Arbitrary<string> = fc
  .uint8Array({ minLength: 1, maxLength: 12 })
  .map((b) => [...b].map((x) => `%${x.toString(16).padStart(2, '0')}`).join(''));

/** A string percent-encoded byte by byte as UTF-8 (lone surrogates become U+FFFD). */
export function percentEncode(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((x) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(x)) ? String.fromCharCode(x) : `%${x.toString(16).padStart(2, '0').toUpperCase()}`)).join('');
}

/** Characters a client sends unescaped in a path segment (no '/', '?' or '#'). */
const pathChar: Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: code(0x21, 0x7e).filter((c) => c !== '/' && c !== '?' && c !== '#') },
  { weight: 1, arbitrary: code(0x80, 0xff) },
);

/** One path segment: real keys, UUIDs, escapes, dots, very long text. */
export function segmentOf(reals: Arbitrary<Tpl>): Arbitrary<Tpl> {
  return fc.oneof(
    { weight: 6, arbitrary: reals },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 2, arbitrary: nastyString.map(percentEncode) },
    { weight: 1, arbitrary: percentBytes },
    {
      weight: 2,
      arbitrary: fc.constantFrom('%00', '%ff', '%FF%FE', '..', '.', '%2e%2e', '%2F', '%5C', '%', '%zz', '%E0%A4%A', '%C0%AF',
        '%ED%A0%80', '%EF%BF%BF', ';', '~', '*', '%20', '+', '%2b', 'null', 'undefined', '0', '-1'),
    },
    { weight: 2, arbitrary: fc.string({ unit: pathChar, minLength: 1, maxLength: 40 }) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 2000 }).map((n) => 'a'.repeat(n)) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom('', '%20', '%00', '%09', '0', '{'), reals,
        fc.constantFrom('', '%00', '%0a', '%20', '.json', '%2F..', ';x', '0', '}', '%ff')).map(([a, r, b]) => new Cat([a, r, b])),
    },
  );
}
