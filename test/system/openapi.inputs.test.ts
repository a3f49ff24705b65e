import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { normaliseDomain } from '../../src/licenses/origin.js';
import { UUID } from '../../src/routes/schemas.js';
import { refusalOf } from '../../src/webhooks/guard.js';
import { ADMIN_TOKEN, NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { freshConnectionClient, type Answer } from '../helpers/http.js';
import { bearer } from '../helpers/jwt.js';
import { Documented, type OpenApi, type Parameter } from '../helpers/openapi.js';
import { getTokenPair } from '../helpers/tokens.js';

// Every parameter and body field of /openapi.json and /admin/openapi.json admits exactly
// what the service accepts (property-based, fast-check, fixed seed): values its documented
// schema admits (ajv with the service's formats) are not refused for that field, values it
// rejects are, with the endpoint's refusal (400 naming the field; 400 INVALID_LICENSE_KEY
// for a key in the path; 404 for an admin key or a file name, which the document says).
// Values come from the schema itself (its pattern, its bounds, its literals) and around it
// (one character off, one too long, control characters, lone surrogates, other types), so
// both sides of every limit are tried. Limits off, so that only the field decides.
//
// Three fields are checked by the rule their description states besides the schema: a
// domain must name a host, a cursor must be one the list handed out (opaque: a schema
// cannot say which base64url strings decode to a page's position), and a webhook URL must
// be https:// to a host that is not internal (the service's default settings; the names
// generated here resolve to nothing, so the host as written decides).

const h = await startHarness(t, 'oa-inputs', { ...NO_RATE_LIMITS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0' });
const c = freshConnectionClient(h.url);
const doc = (await c.request('GET', '/openapi.json')).body as OpenApi;
const adminDoc = (await c.request('GET', '/admin/openapi.json')).body as OpenApi;
const documented = new Documented(doc);
const SEED = 20251125;

// one license for the public probes (its access token must stay valid), another for the admin API's changes
const lic = await h.createLicense({ totalQuota: 1000 });
const { accessToken } = await getTokenPair(h, lic);
const adminLic = await h.createLicense();
const admin = bearer(ADMIN_TOKEN);
const inAYear = new Date(Date.now() + 365 * 86_400_000).toISOString();

// ---- values ------------------------------------------------------------------------------

const ODD = ['\u0000', '\u001f', '\u007f', '\t', '\n', '\ud800', '\udfff', 'é', 'ş', '😀', '\u0085', '\u00a0', '+', '%', '|', '/', ' ', '.'];
const unit = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...'aZ09-_:') }, { weight: 2, arbitrary: fc.constantFrom(...ODD) });
/** Strings of a few characters, odd ones among them, and ASCII strings at and around a length bound. */
const strings = (bound: number | undefined) => fc.oneof(
  fc.string({ unit, maxLength: 8 }),
  ...(bound === undefined ? [] : [fc.integer({ min: Math.max(0, bound - 1), max: bound + 1 }).map((n) => 'a'.repeat(n))]),
);
/** A string one edit away from s: a character replaced, removed or added. */
const nearby = (s: string) => fc.tuple(fc.nat(), fc.constantFrom(...'aZ0-_ ', ...ODD), fc.constantFrom('replace', 'remove', 'insert'))
  .map(([at, ch, how]) => {
    const i = s.length === 0 ? 0 : at % s.length;
    return how === 'replace' ? s.slice(0, i) + ch + s.slice(i + 1) : how === 'remove' ? s.slice(0, i) + s.slice(i + 1) : s.slice(0, i) + ch + s.slice(i);
  });
const others = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}));

type Schema = Record<string, unknown>;
/** Values on both sides of a schema's limits. */
function valuesOf(schema: Schema): fc.Arbitrary<unknown> {
  const out: fc.Arbitrary<unknown>[] = [others];
  const branches = [schema, ...((schema.anyOf ?? schema.oneOf ?? []) as Schema[])];
  for (const s of branches) {
    if ('const' in s) out.push(fc.constant(s.const));
    if (typeof s.pattern === 'string') {
      const matching = fc.stringMatching(new RegExp(s.pattern));
      out.push(matching, matching.chain(nearby));
    }
    if (s.type === 'string') out.push(strings(s.maxLength as number | undefined), strings(s.minLength as number | undefined));
    if (s.format === 'instant') out.push(fc.date({ min: new Date('1960-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()), fc.constantFrom('2026-02-29T00:00:00Z', '2028-02-29T12:00:00+03:00', '2026-13-01T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01'));
    if (s.format === 'webhook-url') out.push(fc.webUrl({ withQueryParameters: true }), fc.constantFrom('ftp://x.example', 'https://user:pw@x.example', 'https:// x.example', 'https://'));
    if (s.type === 'integer' || s.type === 'number') {
      const lo = (s.minimum as number | undefined) ?? 0;
      const hi = (s.maximum as number | undefined) ?? 1e6;
      out.push(fc.constantFrom(lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, lo + 0.5), fc.integer({ min: -5, max: 20 }));
    }
    if (s.type === 'array') out.push(fc.array(fc.oneof(fc.domain(), fc.constantFrom('*.ornek.com.tr', 'https://eczane.ornek.com.tr:8443/x', 'https://', '-bad-.com', 'a,b.com'), strings(253)), { maxLength: 3 }),
      fc.constant(Array.from({ length: 101 }, (_, i) => `d${i}.example`)));
    if (s.type === 'boolean') out.push(fc.boolean());
  }
  return fc.oneof(...out);
}

// ---- probes: how a field is sent, and how the service refuses it ---------------------------

interface Probe {
  send(value: unknown): Promise<Answer>;
  /** the answer that refuses this field */
  refused(res: Answer): boolean;
  /** values to try (default: valuesOf the documented schema) */
  values?: fc.Arbitrary<unknown>;
  /** the rule beyond the schema the field's description states */
  alsoAdmits?: (value: unknown) => boolean;
  /** values this probe cannot judge (skipped): the transport cannot carry them, or their answer is the refusal's anyway */
  skip?: (value: unknown) => boolean;
  runs?: number;
}

const naming = (field: string) => (res: Answer) => res.status === 400 && typeof res.body?.error?.message === 'string'
  && res.body.error.code === 'INVALID_REQUEST' && new RegExp(`(: |^)${field}(\\[\\d+\\])?(:|$)`).test(res.body.error.message);
const validateNaming = (field: string) => (res: Answer) => res.status === 400 && (res.body?.message === `Geçersiz istek: ${field}` || (field === 'token' && res.body?.message === 'Token boş olamaz'));
const invalidKey = (res: Answer) => res.status === 400 && res.body?.error?.code === 'INVALID_LICENSE_KEY';
const notFound = (res: Answer) => res.status === 404;

/** In a URL: not a lone surrogate (encodeURIComponent cannot), and a path segment neither empty nor a dot segment. */
const notInPath = (v: unknown) => typeof v !== 'string' || v === '' || v === '.' || v === '..' || !isWellFormed(v);
const notInQuery = (v: unknown) => typeof v !== 'string' || !isWellFormed(v);
/**
 * A header value: node sends only Latin-1 without control characters; its leading and
 * trailing whitespace is not part of it (RFC 9110 5.5), and uWebSockets.js strips bytes
 * outside ASCII at either end as well, so those are no value a client can mean.
 */
const notInHeader = (v: unknown) => typeof v !== 'string' || /[^\x20-\x7e\x80-\xff]|^[ \t\x80-\xff]|[ \t\x80-\xff]$/.test(v);
function isWellFormed(s: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}
const pathValue = (v: unknown) => encodeURIComponent(String(v));

const post = (path: string, base: Record<string, unknown>, field: string, headers: Record<string, string> = {}) =>
  (v: unknown) => c.request('POST', path, { ...base, [field]: v }, headers);
const adminBody = (method: string, path: string, base: Record<string, unknown>, field: string) =>
  (v: unknown) => c.request(method, path, { ...base, [field]: v }, admin);
const keyPath = `/admin/v1/licenses/${adminLic.licenseKey}`;
/** The admin license's key in any case, and values around it. */
const adminKeys = fc.oneof(
  fc.array(fc.boolean(), { minLength: 36, maxLength: 36 }).map((up) => [...adminLic.licenseKey].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join('')),
  fc.constant(adminLic.licenseKey).chain(nearby), valuesOf({ type: 'string' }),
);
/** An admin key the answer cannot judge: a UUID of no license is 404 like a refused key. */
const unjudgedKey = (v: unknown) => notInPath(v) || (UUID.test(String(v)) && String(v).toLowerCase() !== adminLic.licenseKey);
const newLicense = { organizationName: 'Girdi A.Ş.', password: 'a password', totalQuota: 5, expiryDate: inAYear };
/** A webhookUrl the default settings send to: https://, and no internal address or name as its host. */
const DEFAULT_TARGETS = { allowHttp: false, allowPrivateNetworks: false };
const allowedTarget = (v: unknown) => v === null || refusalOf(new URL(v as string), DEFAULT_TARGETS) === null;
const secret = 'w'.repeat(16);

/** A cursor some list hands out: the base64url of its sort key. */
const cursorOf = (...parts: string[]) => Buffer.from(parts.join('|'), 'utf8').toString('base64url');
const historyCursors = fc.tuple(fc.date({ min: new Date(0), max: new Date('9999-12-31'), noInvalidDate: true }), fc.uuid()).map(([d, id]) => cursorOf(d.toISOString(), id));
const adminCursors = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 17n - 1n }), fc.string({ unit: fc.constantFrom(...'aZ09-_é😀| '), minLength: 1, maxLength: 40 })).map(([m, id]) => cursorOf(String(m), id));
/** The holder's ledger cursors: a time and an entry's reference ("e" and its zero-padded id). */
const ledgerCursors = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 17n - 1n }), fc.bigInt({ min: 1n, max: 10n ** 18n - 1n })).map(([m, id]) => cursorOf(String(m), `e${String(id).padStart(19, '0')}`));
/** The admin ledger's cursors: a time and a line's reference (an entry's "e" and zero-padded id, a day's "s" and date). */
const adminLedgerCursors = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 17n - 1n }), fc.oneof(
  fc.bigInt({ min: 1n, max: 10n ** 18n - 1n }).map((id) => `e${String(id).padStart(19, '0')}`),
  fc.date({ min: new Date('2000-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }).map((d) => `s${d.toISOString().slice(0, 10)}`),
)).map(([m, ref]) => cursorOf(String(m), ref));
/** The audit log's cursors: a time and a record id (a positive integer). */
const auditCursors = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 17n - 1n }), fc.bigInt({ min: 1n, max: 10n ** 18n - 1n })).map(([m, id]) => cursorOf(String(m), String(id)));
const handedOut = new Set<string>();
const cursors = (good: fc.Arbitrary<string>, schema: Schema) => fc.oneof(good.map((s) => (handedOut.add(s), s)), valuesOf(schema));

/** sign's documents: lists of documents around the limits of their two fields, and the schema's own values. */
const SIGN_DOCS = [{ name: 'belge.pdf', sha256: 'a'.repeat(64) }];
const signedDocument = fc.record({ name: strings(255), sha256: fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{64}$/), fc.stringMatching(/^[0-9a-fA-F]{64}$/).chain(nearby)) });
const documentLists = (schema: Schema) => fc.oneof(fc.array(fc.oneof({ weight: 4, arbitrary: signedDocument }, { weight: 1, arbitrary: others }), { minLength: 1, maxLength: 3 }), valuesOf(schema));

const PROBES: Record<string, Probe> = {
  'post /api/v1/auth/get-token body.licenseKey': { send: post('/api/v1/auth/get-token', { password: 'x', imzaTipi: 0 }, 'licenseKey'), refused: naming('licenseKey'), runs: 40 },
  'post /api/v1/auth/get-token body.password': { send: post('/api/v1/auth/get-token', { licenseKey: randomUUID(), imzaTipi: 0 }, 'password'), refused: naming('password'), runs: 40 },
  'post /api/v1/auth/get-token body.imzaTipi': { send: post('/api/v1/auth/get-token', { licenseKey: randomUUID(), password: 'x' }, 'imzaTipi'), refused: naming('imzaTipi'), runs: 40 },
  'post /api/v1/auth/sign-token body.imzaTipi': { send: post('/api/v1/auth/sign-token', {}, 'imzaTipi', bearer(accessToken)), refused: naming('imzaTipi') },
  'post /api/license/validate body.token': { send: post('/api/license/validate', {}, 'token'), refused: validateNaming('token') },
  'post /api/license/validate body.origin': { send: post('/api/license/validate', { token: 'x' }, 'origin'), refused: validateNaming('origin') },
  'post /api/license/validate body.licenseKey': { send: post('/api/license/validate', { password: 'x' }, 'licenseKey'), refused: naming('licenseKey'), runs: 40 },
  'post /api/license/validate body.password': { send: post('/api/license/validate', { licenseKey: randomUUID() }, 'password'), refused: naming('password'), runs: 40 },
  'post /api/license/validate header.Idempotency-Key': {
    send: (v) => c.request('POST', '/api/license/validate', { token: 'x' }, { 'idempotency-key': String(v) }), refused: validateNaming('Idempotency-Key'), skip: notInHeader,
  },
  'post /api/license/release body.token': { send: post('/api/license/release', {}, 'token'), refused: validateNaming('token') },
  'post /api/license/release body.reason': { send: post('/api/license/release', { token: 'x' }, 'reason'), refused: validateNaming('reason') },
  'post /api/license/release header.Idempotency-Key': {
    send: (v) => c.request('POST', '/api/license/release', { token: 'x' }, { 'idempotency-key': String(v) }), refused: validateNaming('Idempotency-Key'), skip: notInHeader,
  },
  'post /api/signature/sign body.token': { send: post('/api/signature/sign', { documents: SIGN_DOCS }, 'token'), refused: validateNaming('token') },
  'post /api/signature/sign body.origin': { send: post('/api/signature/sign', { token: 'x', documents: SIGN_DOCS }, 'origin'), refused: validateNaming('origin') },
  'post /api/signature/sign body.documents': {
    send: post('/api/signature/sign', { token: 'x' }, 'documents'), refused: validateNaming('documents'),
    values: documentLists({ type: 'array' }),
  },
  'post /api/signature/sign header.Idempotency-Key': {
    send: (v) => c.request('POST', '/api/signature/sign', { token: 'x', documents: SIGN_DOCS }, { 'idempotency-key': String(v) }), refused: validateNaming('Idempotency-Key'), skip: notInHeader,
  },
  'get /api/license/check-quota/{licenseKey} path.licenseKey': { send: (v) => c.request('GET', `/api/License/check-quota/${pathValue(v)}`), refused: invalidKey, skip: notInPath },
  'get /api/license/history/{licenseKey} path.licenseKey': { send: (v) => c.request('GET', `/api/License/history/${pathValue(v)}`, undefined, bearer(accessToken)), refused: invalidKey, skip: notInPath },
  'get /api/license/history/{licenseKey} query.limit': { send: (v) => c.request('GET', `/api/License/history/${lic.licenseKey}?limit=${encodeURIComponent(String(v))}`, undefined, bearer(accessToken)), refused: naming('limit'), skip: notInQuery },
  'get /api/license/history/{licenseKey} query.cursor': {
    send: (v) => c.request('GET', `/api/License/history/${lic.licenseKey}?cursor=${encodeURIComponent(String(v))}`, undefined, bearer(accessToken)), refused: naming('cursor'), skip: notInQuery,
    values: cursors(historyCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{82}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'get /api/license/ledger/{licenseKey} path.licenseKey': { send: (v) => c.request('GET', `/api/License/ledger/${pathValue(v)}`, undefined, bearer(accessToken)), refused: invalidKey, skip: notInPath },
  'get /api/license/ledger/{licenseKey} query.limit': { send: (v) => c.request('GET', `/api/License/ledger/${lic.licenseKey}?limit=${encodeURIComponent(String(v))}`, undefined, bearer(accessToken)), refused: naming('limit'), skip: notInQuery },
  'get /api/license/ledger/{licenseKey} query.cursor': {
    send: (v) => c.request('GET', `/api/License/ledger/${lic.licenseKey}?cursor=${encodeURIComponent(String(v))}`, undefined, bearer(accessToken)), refused: naming('cursor'), skip: notInQuery,
    values: cursors(ledgerCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{1,256}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'post /admin/v1/licenses body.organizationName': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'organizationName'), refused: naming('organizationName'), runs: 40 },
  'post /admin/v1/licenses body.password': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'password'), refused: naming('password'), runs: 40 },
  'post /admin/v1/licenses body.totalQuota': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'totalQuota'), refused: naming('totalQuota'), runs: 40 },
  'post /admin/v1/licenses body.expiryDate': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'expiryDate'), refused: naming('expiryDate'), runs: 40 },
  'post /admin/v1/licenses body.isActive': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'isActive'), refused: naming('isActive'), runs: 20 },
  'post /admin/v1/licenses body.domains': {
    send: adminBody('POST', '/admin/v1/licenses', newLicense, 'domains'), refused: naming('domains'), runs: 40,
    alsoAdmits: (v) => (v as string[]).every((d) => normaliseDomain(d) !== null),
  },
  'post /admin/v1/licenses body.licenseKey': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'licenseKey'), refused: naming('licenseKey'), runs: 40 },
  'post /admin/v1/licenses body.webhookUrl': {
    send: adminBody('POST', '/admin/v1/licenses', { ...newLicense, webhookSecret: secret }, 'webhookUrl'), refused: naming('webhookUrl'), runs: 40, alsoAdmits: allowedTarget,
  },
  'post /admin/v1/licenses body.webhookSecret': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'webhookSecret'), refused: naming('webhookSecret'), runs: 40 },
  'post /admin/v1/licenses body.releasesPerDay': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'releasesPerDay'), refused: naming('releasesPerDay'), runs: 40 },
  'post /admin/v1/licenses body.rateLimits': { send: adminBody('POST', '/admin/v1/licenses', newLicense, 'rateLimits'), refused: naming('rateLimits'), runs: 40 },
  'get /admin/v1/licenses/{licenseKey} path.licenseKey': {
    send: (v) => c.request('GET', `/admin/v1/licenses/${pathValue(v)}`, undefined, admin), refused: notFound, skip: unjudgedKey,
    // an unknown key is 404 as well: admitted keys are the license's own, in any case
    values: adminKeys,
  },
  'patch /admin/v1/licenses/{licenseKey} path.licenseKey': { send: (v) => c.request('PATCH', `/admin/v1/licenses/${pathValue(v)}`, { isActive: true }, admin), refused: notFound, skip: unjudgedKey, values: adminKeys },
  'post /admin/v1/licenses/{licenseKey}/quota path.licenseKey': { send: (v) => c.request('POST', `/admin/v1/licenses/${pathValue(v)}/quota`, { add: 1 }, admin), refused: notFound, skip: unjudgedKey, values: adminKeys },
  'get /admin/v1/licenses/{licenseKey}/tokens path.licenseKey': { send: (v) => c.request('GET', `/admin/v1/licenses/${pathValue(v)}/tokens`, undefined, admin), refused: notFound, skip: unjudgedKey, values: adminKeys },
  'patch /admin/v1/licenses/{licenseKey} body.organizationName': { send: adminBody('PATCH', keyPath, {}, 'organizationName'), refused: naming('organizationName') },
  'patch /admin/v1/licenses/{licenseKey} body.password': { send: adminBody('PATCH', keyPath, {}, 'password'), refused: naming('password'), runs: 40 },
  'patch /admin/v1/licenses/{licenseKey} body.expiryDate': { send: adminBody('PATCH', keyPath, {}, 'expiryDate'), refused: naming('expiryDate') },
  'patch /admin/v1/licenses/{licenseKey} body.isActive': { send: adminBody('PATCH', keyPath, {}, 'isActive'), refused: naming('isActive'), runs: 20 },
  'patch /admin/v1/licenses/{licenseKey} body.domains': {
    send: adminBody('PATCH', keyPath, {}, 'domains'), refused: naming('domains'), alsoAdmits: (v) => (v as string[]).every((d) => normaliseDomain(d) !== null),
  },
  'patch /admin/v1/licenses/{licenseKey} body.webhookUrl': { send: adminBody('PATCH', keyPath, { webhookSecret: secret }, 'webhookUrl'), refused: naming('webhookUrl'), alsoAdmits: allowedTarget },
  'patch /admin/v1/licenses/{licenseKey} body.webhookSecret': { send: adminBody('PATCH', keyPath, {}, 'webhookSecret'), refused: naming('webhookSecret') },
  'patch /admin/v1/licenses/{licenseKey} body.releasesPerDay': { send: adminBody('PATCH', keyPath, {}, 'releasesPerDay'), refused: naming('releasesPerDay') },
  'patch /admin/v1/licenses/{licenseKey} body.rateLimits': { send: adminBody('PATCH', keyPath, {}, 'rateLimits'), refused: naming('rateLimits') },
  'post /admin/v1/licenses/{licenseKey}/quota body.add': { send: adminBody('POST', `${keyPath}/quota`, {}, 'add'), refused: naming('add') },
  'post /admin/v1/licenses/{licenseKey}/quota header.Idempotency-Key': {
    send: (v) => c.request('POST', `${keyPath}/quota`, { add: 1 }, { ...admin, 'idempotency-key': String(v) }), refused: naming('Idempotency-Key'), skip: notInHeader,
  },
  'get /admin/v1/licenses query.limit': { send: (v) => c.request('GET', `/admin/v1/licenses?limit=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('limit'), skip: notInQuery },
  'get /admin/v1/licenses query.cursor': {
    send: (v) => c.request('GET', `/admin/v1/licenses?cursor=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('cursor'), skip: notInQuery,
    values: cursors(adminCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{1,256}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'get /admin/v1/licenses/{licenseKey}/tokens query.limit': { send: (v) => c.request('GET', `${keyPath}/tokens?limit=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('limit'), skip: notInQuery },
  'get /admin/v1/licenses/{licenseKey}/tokens query.cursor': {
    send: (v) => c.request('GET', `${keyPath}/tokens?cursor=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('cursor'), skip: notInQuery,
    values: cursors(adminCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{1,256}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'get /admin/v1/licenses/{licenseKey}/ledger path.licenseKey': { send: (v) => c.request('GET', `/admin/v1/licenses/${pathValue(v)}/ledger`, undefined, admin), refused: notFound, skip: unjudgedKey, values: adminKeys },
  'get /admin/v1/licenses/{licenseKey}/ledger query.limit': { send: (v) => c.request('GET', `${keyPath}/ledger?limit=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('limit'), skip: notInQuery },
  'get /admin/v1/licenses/{licenseKey}/ledger query.cursor': {
    send: (v) => c.request('GET', `${keyPath}/ledger?cursor=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('cursor'), skip: notInQuery,
    values: cursors(adminLedgerCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{1,256}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'post /admin/v1/licenses/{licenseKey}/quota body.expiresAt': {
    send: adminBody('POST', `${keyPath}/quota`, { add: 1 }, 'expiresAt'), refused: naming('expiresAt'),
    // an instant already past is refused: a package that could not be spent
    alsoAdmits: (v) => v === null || Date.parse(v as string) > Date.now(),
  },
  'post /admin/v1/licenses/{licenseKey}/quota body.note': { send: adminBody('POST', `${keyPath}/quota`, { add: 1 }, 'note'), refused: naming('note') },
  'get /admin/v1/licenses/{licenseKey}/tokens query.status': { send: (v) => c.request('GET', `${keyPath}/tokens?status=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('status'), skip: notInQuery },
  'get /admin/v1/audit query.licenseKey': { send: (v) => c.request('GET', `/admin/v1/audit?licenseKey=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('licenseKey'), skip: notInQuery },
  'get /admin/v1/audit query.since': { send: (v) => c.request('GET', `/admin/v1/audit?since=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('since'), skip: notInQuery },
  'get /admin/v1/audit query.limit': { send: (v) => c.request('GET', `/admin/v1/audit?limit=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('limit'), skip: notInQuery },
  'get /admin/v1/audit query.cursor': {
    send: (v) => c.request('GET', `/admin/v1/audit?cursor=${encodeURIComponent(String(v))}`, undefined, admin), refused: naming('cursor'), skip: notInQuery,
    values: cursors(auditCursors, { type: 'string', pattern: '^[A-Za-z0-9_-]{1,256}$' }), alsoAdmits: (v) => handedOut.has(v as string),
  },
  'get /docs/{asset} path.asset': { send: (v) => c.request('GET', `/docs/${pathValue(v)}`), refused: notFound, skip: notInPath },
  'get /dashboard/{asset} path.asset': { send: (v) => c.request('GET', `/dashboard/${pathValue(v)}`), refused: notFound, skip: notInPath },
  'head /dashboard/{asset} path.asset': { send: (v) => c.request('HEAD', `/dashboard/${pathValue(v)}`), refused: notFound, skip: notInPath },
};

// ---- the fields of the document ----------------------------------------------------------

/** Every documented input with a constraint: each body field, each parameter whose schema says more than its type. */
interface BodySchema { properties?: Record<string, Schema>; anyOf?: BodySchema[]; oneOf?: BodySchema[] }

function fields(): Map<string, Schema> {
  const out = new Map<string, Schema>();
  for (const [path, item] of Object.entries({ ...doc.paths, ...adminDoc.paths })) {
    for (const [method, op] of Object.entries(item)) {
      for (const p of (op.parameters ?? []) as Parameter[]) {
        if (Object.keys(p.schema).some((k) => k !== 'type' && k !== 'description')) out.set(`${method} ${path} ${p.in}.${p.name}`, p.schema);
      }
      const body = op.requestBody?.content['application/json']?.schema as BodySchema | undefined;
      // a body of several kinds (validate's: a redemption, or license validation) has the fields of each
      for (const kind of body === undefined ? [] : [body, ...(body.anyOf ?? body.oneOf ?? [])]) {
        for (const [name, schema] of Object.entries(kind.properties ?? {})) out.set(`${method} ${path} body.${name}`, schema);
      }
    }
  }
  return out;
}

t.test('every constrained input of the document has a probe here', async (t) => {
  t.same([...fields().keys()].filter((f) => !PROBES[f]).sort(), [], 'no field without a probe (add one to PROBES)');
  t.same(Object.keys(PROBES).filter((f) => !fields().has(f)).sort(), [], 'no probe of a field the document does not have');
});

for (const [field, schema] of fields()) {
  const probe = PROBES[field];
  if (!probe) continue;
  t.test(`${field}: admitted values are not refused, rejected ones are`, async (t) => {
    const admits = documented.validatorOf(schema);
    let admitted = 0;
    let rejected = 0;
    // a parameter is text on the wire: what is judged is what is sent
    const onTheWire = field.includes(' body.') ? (v: unknown) => v : (v: unknown) => String(v);
    await fc.assert(fc.asyncProperty((probe.values ?? valuesOf(schema)).map(onTheWire), async (value) => {
      if (probe.skip?.(value)) return true;
      const ok = admits(value) && (probe.alsoAdmits?.(value) ?? true);
      const res = await probe.send(value);
      if (ok) admitted++;
      else rejected++;
      if (probe.refused(res) === ok) throw new Error(`${JSON.stringify(value)}: the schema ${ok ? 'admits' : 'rejects'} it, the service answered ${res.status} ${res.text.slice(0, 200)}`);
      return true;
    }), { seed: SEED, numRuns: probe.runs ?? 100 });
    t.ok(admitted > 0 && rejected > 0, `both sides tried (${admitted} admitted, ${rejected} rejected)`);
  });
}
