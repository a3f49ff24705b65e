import { createHmac } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import fc, { type Arbitrary } from 'fast-check';

// Property-based fuzzing of the HTTP API (test/fuzz.test.ts): hostile value generators,
// placeholders for real credentials (resolved when a run executes, so the deeper code paths
// are reached and not only the first schema check), a raw HTTP client (paths are sent as
// generated: no normalisation of '..', no re-encoding) and the published error shapes.

// ---- run parameters -------------------------------------------------------------------------

function intFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return value;
}

/** FUZZ_SEED (default fixed, so `make test` is reproducible); `make fuzz` passes a random one. */
export const FUZZ_SEED = intFromEnv('FUZZ_SEED', 20261122) | 0;
/** FUZZ_RUNS: the base number of runs of a property (each property runs a multiple of it). */
export const FUZZ_RUNS = Math.max(1, intFromEnv('FUZZ_RUNS', 100));
/** FUZZ_ONLY: run only the properties whose name contains this text. */
export const FUZZ_ONLY = process.env.FUZZ_ONLY ?? '';
/** FUZZ_PATH: replay one counterexample (with FUZZ_SEED and FUZZ_ONLY, as fast-check prints it). */
export const FUZZ_PATH = process.env.FUZZ_PATH || undefined;
/** FUZZ_COLLECT=1: do not stop at the first failure; list every distinct one at the end. */
export const FUZZ_COLLECT = process.env.FUZZ_COLLECT === '1';

export function runsFor(weight: number): number {
  return Math.max(3, Math.round(FUZZ_RUNS * weight));
}

// ---- placeholders ---------------------------------------------------------------------------

/** Real values of the running service, filled in when a run executes. */
export type RealKind =
  | 'key' | 'keyUpper' | 'key2' | 'victimKey' | 'password' | 'password2' | 'firmaId' | 'firmaId2'
  | 'access' | 'access2' | 'accessInactive' | 'sign' | 'sign2' | 'usedSign' | 'inactiveSign' | 'noQuotaSign'
  | 'admin';

export class Real {
  constructor(readonly kind: RealKind) {}
  [fc.toStringMethod](): string {
    return `Real(${this.kind})`;
  }
}

/** Literal JSON text, for what JSON.stringify cannot write: -0, 1e309, deep nesting. */
export class Raw {
  constructor(readonly text: string) {}
  [fc.toStringMethod](): string {
    return `Raw(${JSON.stringify(this.text.length > 80 ? `${this.text.slice(0, 80)}…(${this.text.length})` : this.text)})`;
  }
}

/** Seconds from the moment the run executes (iat, exp of crafted tokens). */
export class Rel {
  constructor(readonly seconds: number) {}
  [fc.toStringMethod](): string {
    return `Rel(${this.seconds})`;
  }
}

/** A string made of parts, some of them placeholders. */
export class Cat {
  constructor(readonly parts: readonly Tpl[]) {}
  [fc.toStringMethod](): string {
    return `Cat(${fc.stringify(this.parts)})`;
  }
}

/** A JSON object written with its keys as given, duplicates included. */
export class Pairs {
  constructor(readonly pairs: readonly (readonly [string, FV])[]) {}
  [fc.toStringMethod](): string {
    return `Pairs(${fc.stringify(this.pairs)})`;
  }
}

export interface CraftSpec {
  header: FV;
  claims: FV;
  /** 'real': the service's own secret, so the claims are what gets tested */
  key: 'real' | 'wrong' | 'empty';
  hash: 'sha256' | 'sha512' | 'none';
  mangle: 'none' | 'extra-part' | 'no-signature' | 'trailing-dot' | 'padded' | 'spaces' | 'two-tokens';
}

/** A JWT built by hand when the run executes. */
export class Crafted {
  constructor(readonly spec: CraftSpec) {}
  [fc.toStringMethod](): string {
    return `Crafted(${fc.stringify(this.spec)})`;
  }
}

/** A generated JSON-ish value with placeholders. */
export type FV =
  | null | boolean | number | string | Real | Raw | Rel | Cat | Pairs | Crafted
  | FV[] | { [key: string]: FV };

export type Tpl = string | Cat | Real | Crafted;

export type Body =
  | { kind: 'json'; value: FV }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'none' };

/** One generated request. */
export interface Req {
  method: string;
  path: Tpl;
  headers: Record<string, Tpl | undefined>;
  body: Body;
}

/** What fills the placeholders in. */
export interface Resolver {
  real(kind: RealKind): Promise<string>;
  jwtSecret: string;
}

export async function resolveTpl(r: Resolver, tpl: Tpl): Promise<string> {
  if (typeof tpl === 'string') return tpl;
  if (tpl instanceof Real) return r.real(tpl.kind);
  if (tpl instanceof Crafted) return craft(r, tpl.spec);
  let out = '';
  for (const part of tpl.parts) out += await resolveTpl(r, part);
  return out;
}

/** JSON text of a generated value, placeholders filled in. */
export async function toJson(r: Resolver, v: FV): Promise<string> {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Raw) return v.text;
  if (v instanceof Rel) return String(Math.floor(Date.now() / 1000) + v.seconds);
  if (v instanceof Real || v instanceof Cat || v instanceof Crafted) return JSON.stringify(await resolveTpl(r, v));
  if (v instanceof Pairs) {
    const parts: string[] = [];
    for (const [k, x] of v.pairs) parts.push(`${JSON.stringify(k)}:${await toJson(r, x)}`);
    return `{${parts.join(',')}}`;
  }
  if (Array.isArray(v)) {
    const parts: string[] = [];
    for (const x of v) parts.push(await toJson(r, x));
    return `[${parts.join(',')}]`;
  }
  const parts: string[] = [];
  for (const k of Object.keys(v)) parts.push(`${JSON.stringify(k)}:${await toJson(r, v[k] as FV)}`);
  return `{${parts.join(',')}}`;
}

async function craft(r: Resolver, spec: CraftSpec): Promise<string> {
  const header = Buffer.from(await toJson(r, spec.header)).toString('base64url');
  const payload = Buffer.from(await toJson(r, spec.claims)).toString('base64url');
  const input = `${header}.${payload}`;
  const secret = spec.key === 'real' ? r.jwtSecret : spec.key === 'wrong' ? 'not-the-secret-0123456789abcdef0123456789' : '';
  const signature = spec.hash === 'none' ? '' : createHmac(spec.hash, Buffer.from(secret)).update(input).digest('base64url');
  const token = `${input}.${signature}`;
  switch (spec.mangle) {
    case 'none': return token;
    case 'extra-part': return `${token}.${signature}`;
    case 'no-signature': return `${input}.`;
    case 'trailing-dot': return `${token}.`;
    case 'padded': return `${token}==`;
    case 'spaces': return ` ${token}\t`;
    case 'two-tokens': return `${token} ${token}`;
  }
}

export async function bodyBytes(r: Resolver, body: Body): Promise<Buffer | null> {
  switch (body.kind) {
    case 'json': return Buffer.from(await toJson(r, body.value), 'utf8');
    case 'text': return Buffer.from(body.text, 'utf8');
    case 'bytes': return Buffer.from(body.bytes);
    case 'none': return null;
  }
}

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
    { weight: 6, arbitrary: fc.constant<FV>({ alg: 'HS256', typ: 'JWT' }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<FV>({ alg: 'none', typ: 'JWT' }, { alg: 'HS512', typ: 'JWT' }, { alg: 'RS256' }, { alg: 'hs256' },
        { alg: 'HS256', kid: '../../../dev/null' }, { alg: 'HS256', crit: ['exp'] }, { alg: 'HS256', typ: 'JWT', jku: 'http://x' }, {}),
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

// ---- HTTP -----------------------------------------------------------------------------------

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: unknown;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A raw HTTP client: the path goes out exactly as given. */
export class RawClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(private readonly port: number) {}

  send(req: Sent, attempt = 0): Promise<Got> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...req.headers };
      if (req.body !== null) headers['content-length'] = req.body.length;
      const r = http.request({ host: '127.0.0.1', port: this.port, method: req.method, path: req.path, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parseJson(text) });
        });
        res.on('error', reject);
      });
      r.setTimeout(10_000, () => r.destroy(new Error('no answer within 10 s')));
      r.on('error', (err: NodeJS.ErrnoException) => {
        // a kept-alive connection the server closed meanwhile (after a 413): once more, on a new one
        if (r.reusedSocket && attempt === 0 && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          resolve(this.send(req, 1));
        } else {
          reject(new Error(`${req.method} ${JSON.stringify(req.path)}: ${err.code ?? ''} ${err.message} (no HTTP answer)`));
        }
      });
      r.end(req.body ?? undefined);
    });
  }

  /**
   * A HEAD request on a connection of its own, read to the end: an answer to HEAD must end
   * with its header block (RFC 9110 9.3.2), so any byte after it breaks the framing of the
   * next answer on a kept-alive connection; those bytes are reported as headBodyBytes.
   */
  head(req: Sent): Promise<Got & { headBodyBytes: number }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, '127.0.0.1');
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => socket.destroy(new Error('no answer to HEAD within 10 s')), 10_000);
      socket.on('connect', () => {
        const lines = [`HEAD ${req.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
        for (const [name, value] of Object.entries(req.headers)) lines.push(`${name}: ${value}`);
        if (req.body !== null) lines.push(`Content-Length: ${req.body.length}`);
        socket.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
        if (req.body !== null) socket.write(req.body);
      });
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`HEAD ${JSON.stringify(req.path)}: ${err.message} (no HTTP answer)`));
      });
      socket.on('end', () => {
        clearTimeout(timer);
        socket.destroy();
        const all = Buffer.concat(chunks);
        const end = all.indexOf('\r\n\r\n');
        if (end < 0) {
          reject(new Error(`HEAD ${JSON.stringify(req.path)}: the connection ended without an answer (${JSON.stringify(all.toString('latin1').slice(0, 200))})`));
          return;
        }
        const [statusLine, ...headerLines] = all.subarray(0, end).toString('latin1').split('\r\n');
        const headers: http.IncomingHttpHeaders = {};
        for (const line of headerLines) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const rest = all.subarray(end + 4);
        const text = rest.toString('utf8');
        resolve({ status: Number(statusLine?.split(' ')[1] ?? 0), headers, text, body: parseJson(text), headBodyBytes: rest.length });
      });
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * A header value as a client can send it: control characters (but tab) dropped, characters
 * above U+00FF as their UTF-8 bytes (one Latin-1 character each), which is what goes out.
 */
export function headerSafe(value: string): string {
  // eslint-disable-next-line no-control-regex -- dropping control characters is the point
  return value.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '').replace(/[^\t\x20-\x7e\x80-\xff]/gu, (c) => Buffer.from(c).toString('latin1'));
}

export async function materialise(r: Resolver, req: Req): Promise<Sent> {
  const headers: Record<string, string> = {};
  for (const [name, tpl] of Object.entries(req.headers)) {
    if (tpl !== undefined) headers[name] = headerSafe(await resolveTpl(r, tpl));
  }
  return { method: req.method, path: await resolveTpl(r, req.path), headers, body: await bodyBytes(r, req.body) };
}

// ---- published shapes -----------------------------------------------------------------------

/**
 * coded: {success:false, error:{code, message}} (sign-token, history, admin, unknown paths);
 * issue: coded, or the published 429 {success:false, message, retryAfter} (get-token, sign-token);
 * message: {success:false, message} (validate; 429 adds retryAfter, quota exhausted remainingQuota 0);
 * timestamped: {success:false, error:{code, message}, timestamp} plus optional data, retryAfter (check-quota).
 */
export type Shape = 'coded' | 'issue' | 'message' | 'timestamped';

/** The error shape(s) of whatever answers at this path (the router matches case-insensitively). */
export function shapesFor(path: string): Shape[] {
  const p = (path.split('?')[0] ?? '').toLowerCase();
  if (p === '/api/v1/auth/get-token' || p === '/api/v1/auth/sign-token') return ['issue'];
  if (p === '/api/license/validate') return ['message'];
  if (/^\/api\/license\/check-quota\/[^/]+\/?$/.test(p)) return ['timestamped'];
  // near misses that a normalising router may send to the endpoint: its shape or the 404 shape
  const norm = p.replace(/\/{2,}/g, '/').replace(/\/+$/, '');
  if (norm === '/api/license/validate') return ['message', 'coded'];
  if (norm === '/api/v1/auth/get-token' || norm === '/api/v1/auth/sign-token') return ['issue'];
  if (/^\/api\/license\/check-quota(\/|$)/.test(norm)) return ['timestamped', 'coded'];
  return ['coded'];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const keysOf = (v: Obj): string => Object.keys(v).sort().join(',');
const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

function codedError(body: Obj, extraKeys: string[]): string | null {
  const allowed = new Set(['success', 'error', ...extraKeys]);
  const stray = Object.keys(body).filter((k) => !allowed.has(k));
  if (stray.length > 0) return `unexpected keys ${stray.join(',')}`;
  if (body.success !== false) return 'success is not false';
  if (!isObj(body.error)) return 'error is not an object';
  if (keysOf(body.error) !== 'code,message') return `error has keys {${keysOf(body.error)}}, not exactly {code, message}`;
  if (typeof body.error.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(body.error.code)) return `error.code ${JSON.stringify(body.error.code)}`;
  if (!nonEmpty(body.error.message)) return 'error.message is not a non-empty string';
  return null;
}

function rateBody(body: Obj): string | null {
  if (keysOf(body) !== 'message,retryAfter,success') return `429 keys {${keysOf(body)}}`;
  if (body.success !== false || !nonEmpty(body.message)) return '429 success/message';
  return null;
}

/** Why a 4xx body is not in the given shape, or null when it is. */
function shapeError(shape: Shape, status: number, body: unknown): string | null {
  if (!isObj(body)) return 'body is not a JSON object';
  switch (shape) {
    case 'coded':
      return codedError(body, []);
    case 'issue':
      if (status === 429 && 'retryAfter' in body) return rateBody(body);
      return codedError(body, []);
    case 'message': {
      const allowed = new Set(['success', 'message']);
      if (status === 429) allowed.add('retryAfter');
      if (status === 400 && body.remainingQuota === 0) allowed.add('remainingQuota'); // quota exhausted (spec)
      const stray = Object.keys(body).filter((k) => !allowed.has(k));
      if (stray.length > 0) return `unexpected keys ${stray.join(',')}`;
      if (body.success !== false) return 'success is not false';
      if (!nonEmpty(body.message)) return 'message is not a non-empty string';
      return null;
    }
    case 'timestamped': {
      const extra = ['timestamp', 'data'];
      if (status === 429) extra.push('retryAfter');
      const err = codedError(body, extra);
      if (err) return err;
      if (typeof body.timestamp !== 'string' || !ISO_UTC.test(body.timestamp)) return `timestamp ${JSON.stringify(body.timestamp)}`;
      if ('data' in body && !isObj(body.data)) return 'data is not an object';
      return null;
    }
  }
}

const STACK_PATTERNS: RegExp[] = [
  /\n\s+at /,
  /\bat [^\n]*\([^)\n]*:\d+:\d+\)/,
  /\w*Error:[^\n]*?(?:\/[\w.@-]+){2,}/,
  /node_modules/,
  /file:\/\//,
  /\/(?:dist|src)\/[\w./-]+\.(?:js|ts)\b/,
  /\.(?:js|ts|mjs|cjs):\d+:\d+/,
];

function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) {
    out.push(k);
    strings(x, out);
  }
  return out;
}

/** Everything of a request that the service may echo back (so an echo is not a stack trace). */
function requestText(sent: Sent): string {
  const body = sent.body?.toString('utf8') ?? '';
  const parsed = parseJson(body);
  let path = sent.path;
  try {
    path += `\n${decodeURIComponent(sent.path)}`;
  } catch {
    // not decodable: the raw path is enough
  }
  return [path, ...Object.values(sent.headers), body, ...strings(parsed)].join('\n');
}

/** The body fields each endpoint reads (CONTRACT: none may hold NUL or another C0 control character). */
const READ_FIELDS: [RegExp, string, string[]][] = [
  [/^\/api\/v1\/auth\/get-token$/, 'POST', ['licenseKey', 'password']],
  [/^\/api\/license\/validate$/, 'POST', ['token', 'origin']],
  [/^\/admin\/v1\/licenses$/, 'POST', ['organizationName', 'password', 'expiryDate', 'licenseKey', 'domains']],
  [/^\/admin\/v1\/licenses\/[^/]+$/, 'PATCH', ['organizationName', 'password', 'expiryDate', 'domains']],
];
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const C0 = /[\u0000-\u001f]/;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * Where a request puts a C0 control character into something the endpoint reads: a body field,
 * a path segment or history's limit and cursor (percent-decoded). Such a request must not succeed.
 */
export function controlCharacterIn(sent: Sent): string | null {
  const [rawPath = '', query = ''] = sent.path.split('?', 2) as [string?, string?];
  const path = rawPath.toLowerCase();
  for (const segment of rawPath.split('/')) if (C0.test(decoded(segment))) return `path segment ${JSON.stringify(segment)}`;
  if (/^\/api\/license\/history\//.test(path)) {
    for (const pair of query.split('&')) {
      const [name = '', value = ''] = pair.split('=', 2) as [string?, string?];
      if ((decoded(name) === 'limit' || decoded(name) === 'cursor') && C0.test(decoded(value))) return `query parameter ${JSON.stringify(pair)}`;
    }
  }
  const rule = READ_FIELDS.find(([pattern, method]) => pattern.test(path) && method === sent.method);
  if (!rule || sent.body === null) return null;
  const body = parseJson(sent.body.toString('utf8'));
  if (!isObj(body)) return null;
  for (const name of rule[2]) {
    if (!Object.prototype.hasOwnProperty.call(body, name)) continue;
    const value = body[name];
    const texts = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    if (texts.some((x) => C0.test(x))) return `body field ${name}`;
  }
  return null;
}

export interface CheckOptions {
  /** HEAD answers carry no body */
  head?: boolean;
}

/** Every way an answer breaks the contract; empty when it is fine. */
export function violations(sent: Sent, got: Got, opts: CheckOptions = {}): string[] {
  const out: string[] = [];
  const { status } = got;
  if (status >= 500) out.push(`status ${status} (>= 500)`);
  else if (status !== 200 && status !== 201 && (status < 400 || status >= 500)) out.push(`status ${status} (neither 200/201 nor 4xx)`);
  const type = String(got.headers['content-type'] ?? '');
  if (!/^application\/json/i.test(type)) out.push(`content-type ${JSON.stringify(type)} is not JSON`);

  const echo = requestText(sent);
  for (const text of [got.text, ...strings(got.body)]) {
    for (const pattern of STACK_PATTERNS) {
      const m = pattern.exec(text);
      if (m && !echo.includes(m[0])) out.push(`stack trace or internal path in the answer: ${JSON.stringify(m[0])}`);
    }
  }
  if (opts.head) return [...new Set(out)];

  if (status === 200 || status === 201) {
    if (!isObj(got.body) || got.body.success !== true) out.push('a 2xx body without success:true');
    const control = controlCharacterIn(sent);
    if (control !== null) out.push(`accepted a C0 control character in the ${control} (CONTRACT: 400)`);
  } else if (status >= 400 && status < 500) {
    const shapes = shapesFor(sent.path);
    const errors = shapes.map((s) => shapeError(s, status, got.body));
    if (!errors.includes(null)) out.push(`not in the published ${shapes.join(' or ')} shape: ${errors.join('; ')}`);
    if (status === 429) {
      const header = String(got.headers['retry-after'] ?? '');
      if (!/^[1-9]\d*$/.test(header)) out.push(`429 without a Retry-After of whole seconds (${JSON.stringify(header)})`);
      if (isObj(got.body) && 'retryAfter' in got.body && String(got.body.retryAfter) !== header) {
        out.push(`retryAfter ${JSON.stringify(got.body.retryAfter)} differs from Retry-After ${JSON.stringify(header)}`);
      }
    }
    if (status === 405 && !got.headers.allow) out.push('405 without an Allow header');
  }
  return [...new Set(out)];
}

/** Text safe for a TAP line: control characters, C1 and line separators escaped. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- escaping control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One failed answer, in words a reader can act on. */
export function describe(label: string, sent: Sent, got: Got | null, problems: string[]): string {
  const body = sent.body === null ? '(none)' : `${sent.body.length} bytes ${JSON.stringify(sent.body.toString('utf8').slice(0, 400))}`;
  return printable([
    `${label}: ${sent.method} ${JSON.stringify(sent.path.length > 300 ? `${sent.path.slice(0, 300)}…` : sent.path)}` +
      (got ? ` -> ${got.status}` : ''),
    `  problems: ${problems.join(' | ')}`,
    `  request headers: ${JSON.stringify(sent.headers).slice(0, 400)}`,
    `  request body: ${body}`,
    got ? `  answer: ${JSON.stringify(got.text.slice(0, 500))}` : '  answer: none',
  ].join('\n')).replace(/\\u000a/g, '\n');
}
