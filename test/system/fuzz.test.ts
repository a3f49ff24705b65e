import fc, { type Arbitrary } from 'fast-check';
import t from 'tap';
import { ADMIN_TOKEN, LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';
import {
  authorizationOf, bodyOf, Cat, commonHeaders, craftedJwt, DATE_STRINGS, describe, field, FUZZ_COLLECT, FUZZ_ONLY, FUZZ_PATH,
  FUZZ_RUNS, FUZZ_SEED, fuzzValue, headerText, materialise, mostly, nastyNumber, nastyString, oneBad, percentEncode, printable,
  RawClient, Real, real, runsFor, segmentOf, tainted, tokenOf, violations,
  type Body, type FV, type Got, type RealKind, type Req, type Resolver, type Sent, type Tpl,
} from '../helpers/fuzz.js';
import { claimsOf } from '../helpers/jwt.js';
import { waitFor } from '../helpers/wait.js';

// Property-based fuzzing of every public and admin endpoint, unknown paths and wrong methods:
// hostile JSON in every field (NUL and other control characters, lone surrogates, 4 KB
// strings, -0, 1e309, deep nesting), random bytes as bodies, odd path segments (%00, %ff, '..',
// 2000 characters), queries and headers, mixed with the real license keys, access and sign
// tokens (and tokens signed with the service's own secret) so the deeper code paths are
// reached, not only the first schema check. Known hostile inputs (KNOWN) run first whatever
// the seed. Every answer must be:
//   - below 500, and 200/201 with success:true or 4xx in the endpoint's published error shape
//     (the published shapes; helpers/fuzz.ts shapesFor), JSON, with Retry-After on 429 and Allow on 405;
//   - free of stack traces and internal paths;
//   - no success when a field, path segment or query parameter the endpoint reads holds a C0
//     control character (published: 400);
//   - for HEAD, an answer without a body;
// and /healthz answers 200 every 10 runs and after each property. The service runs with every
// rate limit off, then a second one with the default limits fuzzes the 429 answers. A canary
// at the end proves that nothing got wedged: a fresh redemption reaches Postgres.
//
// FUZZ_SEED (default 20261122) and FUZZ_RUNS (default 100: the runs of a property are a
// multiple of it, runsFor) change the seed and the number of runs; FUZZ_ONLY=<name part> runs
// only the matching properties; FUZZ_PATH replays the path fast-check prints (with FUZZ_SEED
// and FUZZ_ONLY); FUZZ_COLLECT=1 keeps going after a failure and lists every distinct one.
// With the defaults the file takes about 20 s; FUZZ_RUNS=1000 about two minutes (more than
// tap's default 180 s file timeout at FUZZ_RUNS=2000: run it with --timeout=900).

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

/** The licenses and tokens the placeholders stand for. */
interface Fixtures {
  values: Partial<Record<RealKind, string>>;
  access1: string;
  access2: string;
}

class World implements Resolver {
  readonly jwtSecret: string;

  constructor(private readonly h: Harness, private readonly f: Fixtures) {
    this.jwtSecret = h.config.jwtKeys[0]!.secret;
  }

  async real(kind: RealKind): Promise<string> {
    if (kind === 'sign') return this.mint(this.f.access1);
    if (kind === 'sign2') return this.mint(this.f.access2);
    const value = this.f.values[kind];
    if (value === undefined) throw new Error(`no fixture for ${kind}`);
    return value;
  }

  /** A fresh sign token (sign-token), else (rate limited) a used one. */
  private async mint(access: string): Promise<string> {
    const res = await this.h.signToken(access, 0);
    return res.status === 200 ? (res.body.signToken as string) : (this.f.values.usedSign as string);
  }
}

function ok(what: string, res: { status: number; text: string }): void {
  if (res.status !== 200) throw new Error(`set-up, ${what}: ${res.status} ${res.text}`);
}

/** The licenses of one service: two working ones, one to PATCH at will, an inactive one, one out of quota. */
async function setUp(h: Harness): Promise<Fixtures> {
  const lic1 = await h.createLicense({ totalQuota: 1_000_000 });
  const lic2 = await h.createLicense({ totalQuota: 1_000_000, domains: ['*.example.com', 'example.org', 'örnek.com.tr'] });
  const victim = await h.createLicense({ totalQuota: 100 });
  const inactive = await h.createLicense({ totalQuota: 100 });
  const noQuota = await h.createLicense({ totalQuota: 1 });

  const g1 = await h.getToken(lic1.licenseKey, lic1.password);
  ok('get-token 1', g1);
  const g2 = await h.getToken(lic2.licenseKey, lic2.password);
  ok('get-token 2', g2);
  const gi = await h.getToken(inactive.licenseKey, inactive.password);
  ok('get-token inactive', gi);
  ok('deactivate', await h.admin('PATCH', `/admin/v1/licenses/${inactive.licenseKey}`, { isActive: false }));
  const gq = await h.getToken(noQuota.licenseKey, noQuota.password);
  ok('get-token no quota', gq);
  const spare = await h.signToken(gq.body.accessToken as string);
  ok('sign-token no quota', spare);
  ok('spend the only unit', await h.validate(gq.body.signToken));
  ok('used sign token', await h.validate(g1.body.signToken));

  return {
    values: {
      key: lic1.licenseKey,
      keyUpper: lic1.licenseKey.toUpperCase(),
      key2: lic2.licenseKey,
      victimKey: victim.licenseKey,
      password: lic1.password,
      password2: lic2.password,
      firmaId: lic1.firmaId,
      firmaId2: lic2.firmaId,
      access: g1.body.accessToken,
      access2: g2.body.accessToken,
      accessInactive: gi.body.accessToken,
      usedSign: g1.body.signToken,
      inactiveSign: gi.body.signToken,
      noQuotaSign: spare.body.signToken,
      admin: ADMIN_TOKEN,
    },
    access1: g1.body.accessToken,
    access2: g2.body.accessToken,
  };
}

// ---- request generators -------------------------------------------------------------------

const crafted = craftedJwt(fc.oneof(real('firmaId'), real('firmaId2')));
const licenseKeys: Arbitrary<Tpl> = fc.oneof({ weight: 5, arbitrary: real('key') }, real('keyUpper'), real('key2'), real('victimKey'));
const accessTokens: Arbitrary<Tpl> = fc.oneof(
  { weight: 12, arbitrary: real('access') }, { weight: 2, arbitrary: real('access2') }, real('accessInactive'), real('sign'), real('admin'),
);
const signTokens: Arbitrary<Tpl> = fc.oneof(
  { weight: 6, arbitrary: real('sign') }, { weight: 2, arbitrary: real('sign2') }, real('usedSign'), real('inactiveSign'),
  real('noQuotaSign'), real('access'),
);
const adminAuth: Arbitrary<Tpl | undefined> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(new Cat(['Bearer ', ADMIN_TOKEN])) },
  { weight: 2, arbitrary: authorizationOf(real('admin'), tokenOf(real('admin'), crafted)) },
);
const anyKey = fc.oneof({ weight: 3, arbitrary: licenseKeys }, { weight: 1, arbitrary: fc.uuid() });

/** The endpoint's path as published, now and then in another letter case (paths match case-insensitively). */
function route(path: string): Arbitrary<string> {
  return fc.oneof({ weight: 9, arbitrary: fc.constant(path) }, { weight: 1, arbitrary: fc.mixedCase(fc.constant(path)) });
}

function request(
  method: string | Arbitrary<string>, path: Arbitrary<Tpl>, body: Arbitrary<Body>,
  headers: Record<string, Arbitrary<Tpl | undefined>> = {},
): Arbitrary<Req> {
  return fc
    .record({
      method: typeof method === 'string' ? fc.constant(method) : method,
      path,
      common: commonHeaders(),
      own: fc.record(headers),
      body,
    })
    .map(({ method: m, path: p, common, own, body: b }) => ({ method: m, path: p, headers: { ...common, ...own }, body: b }));
}

const imzaTipi = field(fc.constantFrom(0, 1));
const isoFuture = fc.date({ min: new Date('2027-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());
const isoAny = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());
/** Any instant Date can hold (years -271821 to 275760), as toISOString writes it. */
const anyInstant = fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
/** Dates: valid ones (an offset or no fraction now and then), the tricky ones of DATE_STRINGS, anything. */
const dateField = field(fc.oneof(
  { weight: 8, arbitrary: isoFuture },
  { weight: 1, arbitrary: isoAny },
  { weight: 1, arbitrary: isoFuture.map((d) => d.replace(/\.\d+Z$/, '+03:00')) },
  { weight: 1, arbitrary: anyInstant },
  { weight: 3, arbitrary: fc.constantFrom(...DATE_STRINGS) },
));
const domainish: Arbitrary<FV> = fc.oneof(
  { weight: 6, arbitrary: fc.domain() },
  {
    weight: 2,
    arbitrary: fc.constantFrom('*.example.com', 'example.org', 'localhost', '*.', '*', '*.*.com', 'xn--', 'xn--zz', 'a..b', '-a.com',
      'ÖRNEK.com.tr', 'a,b.com', '1.2.3.4', '[::1]', 'http://x.com/path', 'x.com:99999', 'a'.repeat(64) + '.com', '.', '..'),
  },
  { weight: 1, arbitrary: nastyString },
);
const domainsField = field(fc.oneof({ weight: 3, arbitrary: fc.array(domainish, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.constant<FV>([]) }));
const origins: Arbitrary<FV> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('https://imza.example.com', 'https://example.com', 'example.org', 'https://örnek.com.tr',
      'https://ÖRNEK.COM.TR:8443/x', 'http://a.example.com:8080/path?q#f', 'https://evil.com', 'https://example.com.evil.com',
      'https://xn--rnek-zoa.com.tr', 'imza.example.com.', '//imza.example.com', 'https://[::1]', 'javascript:alert(1)',
      'https://user:pass@imza.example.com', 'https://imza.example.com\u0000.evil.com', '', ' ', null),
  },
  { weight: 2, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: fc.domain() },
);

const getToken = request('POST', route('/api/v1/auth/get-token'), bodyOf({
  licenseKey: field(licenseKeys, fc.uuid()),
  password: field(fc.oneof({ weight: 3, arbitrary: real('password') }, real('password2'))),
  imzaTipi,
}, true, oneBad({
  licenseKey: fc.oneof({ weight: 4, arbitrary: real('key') }, real('keyUpper'), fc.uuid()),
  password: real('password'),
  imzaTipi: fc.constantFrom(0, 1),
})));

// validate's path with a key and a password: license validation, answered as get-token answers
const licenseValidation = request('POST', route('/api/license/validate'), bodyOf({
  licenseKey: field(licenseKeys, fc.uuid()),
  password: field(fc.oneof({ weight: 3, arbitrary: real('password') }, real('password2'))),
}, true, oneBad({
  licenseKey: fc.oneof({ weight: 4, arbitrary: real('key') }, real('keyUpper'), fc.uuid()),
  password: real('password'),
})));

const signToken = request('POST', route('/api/v1/auth/sign-token'), bodyOf({ imzaTipi }), {
  authorization: authorizationOf(accessTokens, tokenOf(accessTokens, crafted)),
});

const validateToken: Arbitrary<FV> = fc.oneof(
  { weight: 10, arbitrary: tokenOf(signTokens, crafted) as Arbitrary<FV> },
  { weight: 1, arbitrary: signTokens.map((s) => new Cat([' \n\t', s, ' \r\n'])) },
  { weight: 2, arbitrary: fuzzValue },
);
const validate = request('POST', route('/api/license/validate'), bodyOf({ token: validateToken, origin: field(origins) }, true, oneBad(
  { token: signTokens as Arbitrary<FV>, origin: origins },
  { token: fc.oneof(crafted as Arbitrary<FV>, fuzzValue), origin: fc.oneof(tainted(origins), fuzzValue) },
)), {
  'idempotency-key': fc.option(fc.oneof(fc.uuid(), headerText, fc.constant('fixed-key-1')), { nil: undefined }),
});

/** Documents as a signing application lists them, and lists that are not quite that. */
const hex64 = fc.stringMatching(/^[0-9a-fA-F]{64}$/);
const goodDocuments: Arbitrary<FV> = fc.array(fc.record({ name: fc.oneof(fc.constantFrom('reçete.xml', 'a.pdf'), fc.string({ minLength: 1, maxLength: 255 })), sha256: hex64 }), { minLength: 1, maxLength: 5 });
const documents: Arbitrary<FV> = fc.oneof(
  { weight: 4, arbitrary: goodDocuments },
  { weight: 1, arbitrary: fc.array(fc.record({ name: fuzzValue, sha256: fc.oneof(hex64, fuzzValue) }), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom<FV>([], {}, 'reçete.xml', [{ name: 'x', sha256: 'A'.repeat(63) }], [{ name: '', sha256: 'a'.repeat(64) }],
    Array.from({ length: 101 }, (_, i) => ({ name: `d${i}`, sha256: 'b'.repeat(64) }))) },
);
const sign = request('POST', route('/api/Signature/sign'), bodyOf({ token: validateToken, origin: field(origins), documents: field(documents) }, true, oneBad(
  { token: signTokens as Arbitrary<FV>, origin: origins, documents: goodDocuments },
  { token: fc.oneof(crafted as Arbitrary<FV>, fuzzValue), origin: fc.oneof(tainted(origins), fuzzValue), documents },
)), {
  'idempotency-key': fc.option(fc.oneof(fc.uuid(), headerText, fc.constant('fixed-key-1')), { nil: undefined }),
});

const pathTail = fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '?x=1', '?', '/extra', '//', '?%00') });
const checkQuota = request('GET', fc.tuple(route('/api/License/check-quota/'), segmentOf(anyKey), pathTail).map((p) => new Cat(p)), fc.constant({ kind: 'none' as const }));

const tokenIdish: Arbitrary<string> = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const cursorText: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(
    fc.oneof(
      { weight: 3, arbitrary: isoAny },
      { weight: 2, arbitrary: anyInstant },
      {
        weight: 2,
        arbitrary: fc.constantFrom('1', 'x', '0', '2024', '2024-13-01', '+275760-09-13T00:00:00.000Z', '-271821-04-20T00:00:00.000Z',
          '0000-01-01T00:00:00.000Z', '-004713-11-24T00:00:00.000Z', 'Tue', '12/31/2024', 'infinity', '2030-12-31T23:59:60Z', '1e308', '-1'),
      },
      { weight: 1, arbitrary: nastyString },
    ),
    fc.oneof({ weight: 3, arbitrary: tokenIdish }, { weight: 1, arbitrary: tainted(tokenIdish) as Arbitrary<string> }, { weight: 1, arbitrary: nastyString },
      { weight: 1, arbitrary: fc.constantFrom('', '|', 'a|b') }),
  ).map(([at, id]) => Buffer.from(`${at}|${id}`).toString('base64url')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64url')) },
  { weight: 1, arbitrary: nastyString.map(percentEncode) },
);
const limitText: Arbitrary<string> = fc.oneof(
  fc.integer({ min: -5, max: 600 }).map(String),
  fc.constantFrom('', '0', '-0', '1e2', '1.0', '1.5', 'NaN', 'Infinity', '0x10', '%205', '5%20', '500', '501', '1e308', '-1', '%00',
    '1%00', '%D9%A3', '%EF%BC%91', '9007199254740993', '1&limit=2', '00001'),
);
const historyQuery: Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc.record({ limit: fc.option(limitText, { nil: undefined }), cursor: fc.option(cursorText, { nil: undefined }) }, { requiredKeys: [] })
      .map(({ limit, cursor }) => `?${[limit === undefined ? null : `limit=${limit}`, cursor === undefined ? null : `cursor=${cursor}`].filter((x) => x !== null).join('&')}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 30 }).map((s) => `?${encodeURI(s)}`) },
);
const history = request('GET', fc.tuple(route('/api/License/history/'), keySegment(fc.oneof({ weight: 4, arbitrary: real('key') }, anyKey)), historyQuery).map((p) => new Cat(p)),
  fc.constant({ kind: 'none' as const }), { authorization: authorizationOf(accessTokens, tokenOf(accessTokens, crafted)) });

/** The admin lists: ?limit=&cursor= (and &status= for a license's tokens), plausible or not. */
const statusText: Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('issued', 'used', 'expired') },
  { weight: 1, arbitrary: fc.constantFrom('', 'USED', 'all', '%00', 'used%00', 'used&status=issued', 'issued,used', '%75sed') },
  { weight: 1, arbitrary: nastyString.map(percentEncode) },
);
function adminListQuery(withStatus: boolean): Arbitrary<string> {
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant('') },
    {
      weight: 6,
      arbitrary: fc.record({
        limit: fc.option(limitText, { nil: undefined }),
        cursor: fc.option(cursorText, { nil: undefined }),
        status: withStatus ? fc.option(statusText, { nil: undefined }) : fc.constant(undefined),
      }, { requiredKeys: [] }).map((q) => `?${Object.entries(q).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`).join('&')}`),
    },
  );
}
const adminList = request('GET', fc.tuple(route('/admin/v1/licenses'), adminListQuery(false)).map((p) => new Cat(p)),
  fc.constant({ kind: 'none' as const }), { authorization: adminAuth });
const adminTokens = request('GET',
  fc.tuple(route('/admin/v1/licenses/'), keySegment(fc.oneof({ weight: 4, arbitrary: real('key') }, anyKey)), route('/tokens'), adminListQuery(true))
    .map((p) => new Cat(p)),
  fc.constant({ kind: 'none' as const }), { authorization: adminAuth });

/** The audit log: ?licenseKey=&since= beside the paging, plausible or not. */
const sinceText: Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: anyInstant.map((d) => encodeURIComponent(String(d))) },
  { weight: 1, arbitrary: fc.constantFrom(...DATE_STRINGS).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.constantFrom('', '%00', '2030-01-01T00:00:00Z%00', 'null', '[]', '1e308', '2030-01-01T00:00:00Z'.repeat(500)) },
  { weight: 1, arbitrary: nastyString.map(percentEncode) },
);
const auditKeyText: Arbitrary<Tpl> = fc.oneof(
  { weight: 3, arbitrary: anyKey },
  { weight: 1, arbitrary: fc.constantFrom('', '%00', 'null', 'abc', `${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}%00`, 'x'.repeat(16_000)) },
  { weight: 1, arbitrary: nastyString.map(percentEncode) },
);
const adminAudit = request('GET',
  fc.tuple(route('/admin/v1/audit'), adminListQuery(false), fc.option(auditKeyText, { nil: undefined }), fc.option(sinceText, { nil: undefined }))
    .map(([path, query, key, since]) => {
      const sep = () => (query === '' ? '?' : '&');
      const parts: Tpl[] = [path, query];
      if (key !== undefined) parts.push(`${sep()}licenseKey=`, key);
      if (since !== undefined) parts.push(`${query === '' && key === undefined ? '?' : '&'}since=${since}`);
      return new Cat(parts);
    }),
  fc.constant({ kind: 'none' as const }), { authorization: adminAuth });

const validLicense: Record<string, Arbitrary<FV>> = {
  organizationName: fc.oneof(fc.constantFrom('Fuzz A.Ş.', 'Örnek Sağlık', 'x'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 })),
  password: fc.oneof(fc.constantFrom('fuzz-password-1', 'p'), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 64 })),
  totalQuota: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.constantFrom(0, 1e12)),
  expiryDate: isoFuture,
  isActive: fc.boolean(),
  domains: fc.array(fc.domain(), { maxLength: 3 }),
  licenseKey: fc.uuid(),
};
const hostileLicense: Record<string, Arbitrary<FV>> = {
  totalQuota: nastyNumber,
  expiryDate: fc.oneof(fc.constantFrom(...DATE_STRINGS), anyInstant),
  domains: fc.array(domainish, { minLength: 1, maxLength: 3 }),
  licenseKey: fc.oneof(real('key'), real('keyUpper'), real('key2'), nastyString),
};
const adminCreate = request('POST', route('/admin/v1/licenses'), bodyOf({
  organizationName: mostly(fc.constantFrom('Fuzz A.Ş.', 'Örnek Sağlık', 'x')),
  password: mostly(fc.constantFrom('fuzz-password-1', 'p')),
  totalQuota: mostly(fc.integer({ min: 0, max: 1000 }), fc.constant(1e12)),
  expiryDate: dateField,
  isActive: mostly(fc.boolean()),
  domains: domainsField,
  licenseKey: mostly(fc.oneof({ weight: 6, arbitrary: fc.uuid() }, real('key'), real('keyUpper'))),
}, true, oneBad(validLicense, hostileLicense)), { authorization: adminAuth });

/** The license key in a path: mostly a real one as it is, otherwise any segment. */
function keySegment(reals: Arbitrary<Tpl>): Arbitrary<Tpl> {
  return fc.oneof({ weight: 2, arbitrary: reals }, { weight: 1, arbitrary: segmentOf(reals) });
}
const adminTarget = keySegment(fc.oneof({ weight: 4, arbitrary: real('victimKey') }, fc.uuid()));
const patchModel: Record<string, Arbitrary<FV>> = {
  organizationName: mostly(fc.constantFrom('Fuzz Değişti A.Ş.', 'y')),
  password: mostly(fc.constantFrom('fuzz-password-2')),
  expiryDate: dateField,
  isActive: mostly(fc.boolean()),
  domains: domainsField,
};
/** A PATCH body: any body of the model, or one field alone (the usual change), plausible or not. */
const validPatch = Object.fromEntries(Object.entries(validLicense).filter(([k]) => k !== 'licenseKey' && k !== 'totalQuota'));
const patchBody: Arbitrary<Body> = fc.oneof(
  { weight: 2, arbitrary: bodyOf(patchModel, true, oneBad(validPatch, hostileLicense)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(...Object.keys(patchModel))
      .chain((name) => (patchModel[name] as Arbitrary<FV>).map((value): Body => ({ kind: 'json', value: { [name]: value } }))),
  },
);
const adminPatch = request('PATCH', fc.tuple(route('/admin/v1/licenses/'), adminTarget).map((p) => new Cat(p)), patchBody, { authorization: adminAuth });

const adminGet = request('GET', fc.tuple(route('/admin/v1/licenses/'), keySegment(anyKey), pathTail).map((p) => new Cat(p)),
  fc.constant({ kind: 'none' as const }), { authorization: adminAuth });

const adminQuota = request('POST',
  fc.tuple(route('/admin/v1/licenses/'), keySegment(fc.oneof(real('victimKey'), real('key2'), fc.uuid())), route('/quota')).map((p) => new Cat(p)),
  bodyOf({ add: field(fc.integer({ min: 1, max: 100 }), fc.constantFrom(1e12, 1e12 + 1, 0, -1)) }),
  { authorization: adminAuth, 'idempotency-key': fc.option(fc.oneof(fc.uuid(), headerText), { nil: undefined }) });

const KNOWN_PATHS = [
  '/api/v1/auth/get-token', '/api/v1/auth/sign-token', '/api/license/validate', '/api/License/check-quota/{k}',
  '/api/License/history/{k}', '/admin/v1/licenses', '/admin/v1/licenses/{k}', '/admin/v1/licenses/{k}/quota', '/healthz',
  '/admin/v1/licenses/{k}/tokens', '/admin/v1/audit',
];
const routingPath: Arbitrary<Tpl> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(
      fc.constantFrom(...KNOWN_PATHS).chain((p) => fc.oneof({ weight: 3, arbitrary: fc.constant(p) }, { weight: 1, arbitrary: fc.mixedCase(fc.constant(p)) })),
      segmentOf(anyKey),
      fc.constantFrom('', '', '', '/', '//', '/x', '/..', '/.', '/%00', ';x', '.json', '?a=b', '/../healthz', '/quota/x', '%20'),
    ).map(([p, seg, tail]) => {
      const [before, after] = p.toLowerCase().includes('{k}') ? p.split(/\{k\}/i) as [string, string] : [p, null];
      return after === null ? new Cat([before, tail]) : new Cat([before, seg, after, tail]);
    }),
  },
  {
    weight: 3,
    arbitrary: fc.array(segmentOf(fc.constantFrom('api', 'License', 'v1', 'admin', 'licenses', 'auth', 'healthz')), { minLength: 0, maxLength: 6 })
      .map((segs) => new Cat(['/', ...segs.flatMap((s, i) => (i === 0 ? [s] : ['/', s]))])),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('/', '//', '/api', '/api/', '/admin', '/admin/', '/admin/v1', '/admin/v1/licenses/', '/api/License',
      '/API/V1/AUTH', '/%2e%2e/%2e%2e/etc/passwd', '/..', '/.', '/healthz/', '/HEALTHZ', '/api/license/validate/',
      '//api/license/validate', '/api/license//validate', '/api/License/check-quota', '/api/License/check-quota/',
      '/api/License/history', '/admin/v1/licenses//quota', '/admin/v1/licenses/x/y/z', '/api/v2/auth/get-token', '/favicon.ico'),
  },
);
const routing = request(
  fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
  routingPath,
  fc.oneof(
    { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 1, arbitrary: fuzzValue.map((value) => ({ kind: 'json' as const, value })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ kind: 'bytes' as const, bytes })) },
  ),
  { authorization: fc.oneof(adminAuth, authorizationOf(accessTokens, tokenOf(accessTokens, crafted))) },
);

/** HEAD on known and unknown paths (a property of its own: it checks the framing of the answer too). */
const headRequests = request('HEAD', routingPath, fc.constant({ kind: 'none' as const }), {
  authorization: fc.oneof(adminAuth, authorizationOf(accessTokens, tokenOf(accessTokens, crafted))),
});

// ---- known hostile inputs, run first whatever the seed ----------------------------------------

const json = (value: FV): Body => ({ kind: 'json', value });
const post = (path: Tpl, value: FV, headers: Record<string, Tpl> = {}): Req =>
  ({ method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: json(value) });
const get = (path: Tpl, headers: Record<string, Tpl> = {}): Req => ({ method: 'GET', path, headers, body: { kind: 'none' } });
const asAdmin = { authorization: new Cat(['Bearer ', ADMIN_TOKEN]) };
const asLicense = { authorization: new Cat(['Bearer ', new Real('access')]) };
const LEAP_SECOND = '2030-12-31T23:59:60Z';
const goodLicense = { organizationName: 'Fuzz A.Ş.', password: 'fuzz-password-1', totalQuota: 5, expiryDate: '2030-12-31T23:59:59Z' };
const victimPath = new Cat(['/admin/v1/licenses/', new Real('victimKey')]);

const KNOWN: Record<string, Req[]> = {
  getToken: [
    post('/api/v1/auth/get-token', { licenseKey: '6f1c2a3e-8b7d-4c5e-9f00-1a2b3c4d5e6f\u0000', password: 'x', imzaTipi: 0 }),
    post('/api/v1/auth/get-token', { licenseKey: '\u0000', password: 'x', imzaTipi: 0 }),
    post('/api/v1/auth/get-token', { licenseKey: new Cat([new Real('key'), '\u0000']), password: new Real('password'), imzaTipi: 0 }),
    post('/api/v1/auth/get-token', { licenseKey: new Real('key'), password: 'pass\u0000word', imzaTipi: 1 }),
  ],
  signToken: [post('/api/v1/auth/sign-token', { imzaTipi: 0 }, { authorization: new Cat(['Bearer ', new Real('access'), '\u00ff']) })],
  validate: [
    post('/api/license/validate', { token: new Real('sign'), origin: 'https://imza.example.com\u0000' }),
    post('/api/license/validate', { token: new Real('sign'), origin: '\ud800' }),
    post('/api/license/validate', { token: new Cat([new Real('sign'), '\u0000']) }),
  ],
  checkQuota: [get('/api/License/check-quota/%00'), get(new Cat(['/api/License/check-quota/', new Real('key'), '%00']))],
  history: [
    ...['1|x', '0000-01-01T00:00:00Z|x', '0000-01-01T00:00:00.000Z|x', '-271821-04-20T00:00:00.000Z|x', '2030-12-31T23:59:60Z|x', '2030-01-01T00:00:00.000Z|\u0000']
      .map((c) => get(new Cat(['/api/License/history/', new Real('key'), `?cursor=${Buffer.from(c).toString('base64url')}`]), asLicense)),
    get(new Cat(['/api/License/history/', new Real('key'), '?limit=1e2']), asLicense),
  ],
  adminCreate: [
    post('/admin/v1/licenses', { ...goodLicense, expiryDate: LEAP_SECOND }, asAdmin),
    post('/admin/v1/licenses', { ...goodLicense, organizationName: 'A\u0000B' }, asAdmin),
    post('/admin/v1/licenses', { ...goodLicense, password: '\u0000' }, asAdmin),
    post('/admin/v1/licenses', { ...goodLicense, domains: ['a\u0000.example.com'] }, asAdmin),
  ],
  adminPatch: [
    { method: 'PATCH', path: victimPath, headers: asAdmin, body: json({ expiryDate: LEAP_SECOND }) },
    { method: 'PATCH', path: victimPath, headers: asAdmin, body: json({ organizationName: 'A\u0000B' }) },
  ],
};

// ---- running a property -------------------------------------------------------------------

/** fast-check's report, readable: long runs of one character shortened, long lines cut. */
function compact(report: string): string {
  const lines = report
    .replace(/(.)\1{23,}/gsu, (run: string, c: string) => `${c}{×${[...run].length}}`)
    .split('\n')
    .map((line) => (line.length > 1500 ? `${line.slice(0, 1500)}…(${line.length} chars)` : line));
  const text = lines.join('\n');
  return text.length > 12_000 ? `${text.slice(0, 12_000)}\n…(report cut at 12000 of ${text.length} chars)` : text;
}

interface Context {
  client: RawClient;
  world: World;
}

/** Sends one request and checks the answer. Returns the problems. */
async function exchange(ctx: Context, label: string, req: Req): Promise<{ sent: Sent; got: Got | null; problems: string[] }> {
  const sent = await materialise(ctx.world, req);
  let got: Got;
  const problems: string[] = [];
  try {
    if (sent.method === 'HEAD') {
      const head = await ctx.client.head(sent);
      if (head.headBodyBytes > 0) {
        problems.push(`the answer to HEAD carries ${head.headBodyBytes} body bytes after its header block (RFC 9110 9.3.2: none; they desynchronise a kept-alive connection)`);
      }
      got = head;
    } else {
      got = await ctx.client.send(sent);
    }
  } catch (err) {
    return { sent, got: null, problems: [String((err as Error).message)] };
  }
  problems.push(...violations(sent, got, { head: sent.method === 'HEAD' }));
  return { sent, got, problems };
}

/** Why the service is not alive and well (GET /healthz must answer 200), or null. */
async function unhealthy(ctx: Context): Promise<string | null> {
  try {
    const health = await ctx.client.send({ method: 'GET', path: '/healthz', headers: {}, body: null });
    return health.status === 200 ? null : `GET /healthz answered ${health.status}: ${health.text}`;
  } catch (err) {
    return `GET /healthz failed: ${(err as Error).message}`;
  }
}

/** An answer in a few words, for the summary of a property: status and code or message. */
function outcomeOf(got: Got): string {
  const body = (typeof got.body === 'object' && got.body !== null ? got.body : {}) as { error?: { code?: unknown }; message?: unknown };
  const message = (body.error as { message?: unknown } | undefined)?.message;
  const what = body.error?.code !== undefined
    ? `${String(body.error.code)}${got.status === 400 && typeof message === 'string' ? ` (${message.slice(0, 40)})` : ''}`
    : got.status >= 300 ? String(body.message ?? '').slice(0, 40) : '';
  return printable(`${got.status}${what === '' ? '' : ` ${what}`}`);
}

/** /healthz is asked after every HEALTH_EVERY-th run (it waits on the usage worker's blocking read: ~50 ms) and after each property. */
const HEALTH_EVERY = 10;

async function property(t: TestT, ctx: Context, name: string, runs: number, arb: Arbitrary<Req>, examples: Req[] = []): Promise<void> {
  if (FUZZ_ONLY !== '' && !name.includes(FUZZ_ONLY)) return;
  await t.test(`${name} (FUZZ_SEED=${FUZZ_SEED}, ${runs} runs)`, async (t) => {
    const outcomes = new Map<string, number>();
    const distinct = new Map<string, { count: number; examples: string[] }>();
    const started = Date.now();
    let run = 0;
    const prop = fc.asyncProperty(arb, async (req) => {
      const { sent, got, problems } = await exchange(ctx, name, req);
      if (got) outcomes.set(outcomeOf(got), (outcomes.get(outcomeOf(got)) ?? 0) + 1);
      if (++run % HEALTH_EVERY === 0) {
        const sick = await unhealthy(ctx);
        if (sick !== null) problems.push(`after this request: ${sick}`);
      }
      if (problems.length === 0) return;
      const text = describe(name, sent, got, problems);
      if (!FUZZ_COLLECT) {
        const error = new Error(text);
        error.stack = text; // the report is the request and the answer; this file's stack would be noise
        throw error;
      }
      const key = `${sent.method} ${got?.status ?? 'no answer'} ${problems.map((p) => p.replace(/\d+/g, 'N').slice(0, 60)).join(' | ')}`;
      const seen = distinct.get(key) ?? { count: 0, examples: [] };
      seen.count++;
      if (seen.examples.length < 3) seen.examples.push(text);
      distinct.set(key, seen);
    });
    try {
      await fc.assert(prop, {
        seed: FUZZ_SEED, numRuns: runs, verbose: 1, path: FUZZ_PATH, timeout: 30_000, includeErrorInReport: true,
        examples: examples.map((e): [Req] => [e]),
      });
      t.pass(`${runs} runs in ${Date.now() - started} ms`);
    } catch (err) {
      const report = compact(printable((err as Error).message).replace(/\\u000a/g, '\n'));
      t.fail(`${name}: the property failed; replay: FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS} FUZZ_ONLY='${name}' (FUZZ_PATH=<path below> for the shrunk case alone)`, {
        diagnostic: true, report, note: 'runs of one character are shown as c{×N}', stack: '', at: null,
      });
    }
    t.equal(await unhealthy(ctx), null, `${name}: GET /healthz answers 200 afterwards`);
    const seen = [...outcomes].sort(([a], [b]) => a.localeCompare(b)).map(([o, n]) => `${n}× ${o}`);
    t.comment(`${name}: ${Date.now() - started} ms; answers: ${seen.join(', ')}`);
    for (const [key, { count, examples }] of distinct) {
      t.fail(`${name}: ${printable(key)} (${count}x)`, { diagnostic: true, examples: examples.join('\n'), stack: '', at: null });
    }
  });
}

// ---- the tests ----------------------------------------------------------------------------

t.comment(`fuzz: FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}${FUZZ_ONLY ? ` FUZZ_ONLY=${FUZZ_ONLY}` : ''}${FUZZ_COLLECT ? ' FUZZ_COLLECT=1' : ''}`);

t.test('fuzz every endpoint', async (t) => {
  // every limit off (failed get-tokens per address too), so the fuzz is not just 429s; one
  // trusted proxy hop, so the random X-Forwarded-For values are parsed, not ignored
  const h = await startHarness(t, 'fuzz', { ...LIVE_COUNTS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0', TRUST_PROXY: '1' });
  const fixtures = await setUp(h);
  const client = new RawClient(h.service.port);
  t.teardown(() => client.close());
  const ctx: Context = { client, world: new World(h, fixtures) };

  // history first, while the redemption of the set-up is its only one (persisted: the history
  // has a row, so a cursor is compared with something); validate last of the endpoints, since
  // what it redeems feeds the usage worker that the canary checks
  await h.drainWorker();
  await property(t, ctx, 'history', runsFor(1), history, KNOWN.history);
  await property(t, ctx, 'get-token', runsFor(0.5), getToken, KNOWN.getToken);
  await property(t, ctx, 'license validation', runsFor(0.5), licenseValidation);
  await property(t, ctx, 'sign-token', runsFor(1), signToken, KNOWN.signToken);
  await property(t, ctx, 'check-quota', runsFor(1), checkQuota, KNOWN.checkQuota);
  await property(t, ctx, 'admin create', runsFor(0.5), adminCreate, KNOWN.adminCreate);
  await property(t, ctx, 'admin get', runsFor(0.5), adminGet);
  await property(t, ctx, 'admin patch', runsFor(0.5), adminPatch, KNOWN.adminPatch);
  await property(t, ctx, 'admin quota', runsFor(0.5), adminQuota);
  await property(t, ctx, 'admin list', runsFor(0.5), adminList);
  await property(t, ctx, 'admin tokens', runsFor(0.5), adminTokens);
  await property(t, ctx, 'admin audit', runsFor(0.5), adminAudit);
  await property(t, ctx, 'validate', runsFor(1.5), validate, KNOWN.validate);
  await property(t, ctx, 'sign', runsFor(1), sign);
  await property(t, ctx, 'unknown paths and wrong methods', runsFor(1), routing);
  await property(t, ctx, 'HEAD', runsFor(0.2), headRequests);

  const rateName = 'rate-limited endpoints';
  if (FUZZ_ONLY === '' || rateName.includes(FUZZ_ONLY)) await t.test('rate limits on: 429 answers fuzzed too', async (t) => {
    // the default limits, failed get-tokens per address included (addresses from X-Forwarded-For); past a
    // failure budget refused at once (a failure held for its turn would never reach a 429 one at a time)
    const hr = await startHarness(t, 'fuzzrate', { TRUST_PROXY: '1', GET_TOKEN_MAX_DELAY_MS: '0' });
    const fr = await setUp(hr);
    const rclient = new RawClient(hr.service.port);
    t.teardown(() => rclient.close());
    const rctx: Context = { client: rclient, world: new World(hr, fr) };
    const key = fr.values.key as string;

    // exhaust every limit of license 1, checking each answer on the way (room for a window that
    // resets meanwhile: a limit's window starts at its first request)
    const until429 = async (what: string, max: number, make: () => Req, seen: (got: Got) => void = () => {}): Promise<void> => {
      for (let i = 0; i < max; i++) {
        const { sent, got, problems } = await exchange(rctx, what, make());
        if (problems.length > 0) t.fail(`${what}: ${problems.join(' | ')}`, { diagnostic: true, report: describe(what, sent, got, problems), stack: '', at: null });
        if (got) seen(got);
        if (got?.status === 429) {
          t.pass(`${what}: 429 after ${i} requests, in the published shape`);
          return;
        }
      }
      t.fail(`${what}: no 429 within ${max} requests`);
    };
    await until429('get-token', 25, () => post('/api/v1/auth/get-token', { licenseKey: key, password: 'wrong password', imzaTipi: 0 }));
    await until429('check-quota', 25, () => ({ method: 'GET', path: `/api/License/check-quota/${key}`, headers: {}, body: { kind: 'none' } }));
    const minted: string[] = [];
    await until429('sign-token', 205, () => post('/api/v1/auth/sign-token', { imzaTipi: 1 }, { authorization: `Bearer ${fr.access1}` }),
      (got) => {
        const token = (got.body as { signToken?: unknown } | undefined)?.signToken;
        if (got.status === 200 && typeof token === 'string') minted.push(token);
      });
    await until429('validate', 205, () => post('/api/license/validate', { token: minted.pop() ?? fr.values.usedSign ?? '' }));
    await until429('history', 125, () => ({
      method: 'GET', path: `/api/License/history/${key}?limit=1`, headers: { authorization: `Bearer ${fr.access1}` }, body: { kind: 'none' },
    }));

    await property(t, rctx, rateName, runsFor(0.6), fc.oneof(getToken, signToken, validate, checkQuota, history));
  });

  await t.test('canary: a fresh license still redeems and the usage worker still persists', async (t) => {
    const lic = await h.createLicense({ totalQuota: 3 });
    const got = await h.getToken(lic.licenseKey, lic.password, 1);
    t.equal(got.status, 200, `get-token (${got.text})`);
    const signTokenText = got.body?.signToken as string;
    const redeemed = await h.validate(signTokenText);
    t.equal(redeemed.status, 200, `validate (${redeemed.text})`);
    t.equal(redeemed.body?.success, true);
    const tokenId = claimsOf(signTokenText).token_id;
    const within = async (what: string, check: () => Promise<boolean>): Promise<void> => {
      try {
        await waitFor(what, check, 5_000);
      } catch (err) {
        // say why: the worker's lag and dead letters as /healthz reports them
        const health = await h.request('GET', '/healthz');
        throw new Error(`${(err as Error).message} within 5 s; /healthz: ${health.status} ${health.text}`, { cause: err });
      }
    };
    await within('the sign token recorded as used in Postgres', async () => {
      const rows = await h.sql`select status from sign_tokens where token_id = ${tokenId}`;
      return rows[0]?.status === 'used';
    });
    await within('licenses.used_quota 1', async () => {
      const rows = await h.sql`select used_quota::int as used from licenses where license_key = ${lic.licenseKey}`;
      return rows[0]?.used === 1;
    });
    const [row] = await h.sql`select used_quota::int as used from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.used, 1, 'exactly one unit persisted');
    const [token] = await h.sql`select status from sign_tokens where token_id = ${tokenId}`;
    t.equal(token?.status, 'used');
    // for the record: crafted tokens signed with the real secret may carry claims Postgres refuses (dead letters)
    const health = await h.request('GET', '/healthz');
    t.comment(`/healthz after the fuzz: ${health.status} ${health.text}`);
  });
});
