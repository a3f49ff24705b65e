import { createHash } from 'node:crypto';
import {
  ArtefactVerificationError, LicenseSdkError, receiptDigest, verifyLicenseToken, verifyReceipt, type ArtefactProblem, type VerifyOptions,
} from '@license-service/client';
import t from 'tap';
import {
  edHeader, licensePayload, receiptPayload, seg, signEd25519, signerOf, signHs256,
} from '../helpers/artefacts.js';
import { nowSeconds } from '../helpers/jwt.js';
import { rejection } from '../helpers/sdk.js';
import { newSigningKey, TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// Offline verification of license tokens and receipts (packages/client/src/verify.ts) against a JWKS
// given, with artefacts signed by the service's own signer (src/tokens/signingKeys.ts) and,
// for what the service never writes, by hand: every refusal is an ArtefactVerificationError
// with the reason a caller acts on. The JWKS fetched from the service, rotation and the
// refetch limit: verify.keys.test.ts; any string at all: verify.fuzz.test.ts.

const OTHER_KEY = newSigningKey();
const { signer, jwks } = signerOf(TEST_SIGNING_KEY);
const other = signerOf(OTHER_KEY);
const kid = signer.kid;
const x = jwks.keys[0]!.x;
const opts: VerifyOptions = { jwks };

const license = (overrides: Record<string, unknown> = {}): string => signer.sign(JSON.stringify(licensePayload(overrides)));
const receipt = (overrides: Record<string, unknown> = {}): string => signer.sign(JSON.stringify(receiptPayload(overrides)));

/** The reason of the ArtefactVerificationError a verification rejects with; anything else is named so that the assertion fails. */
async function reasonOf(promise: Promise<unknown>): Promise<ArtefactProblem | string> {
  const err = await rejection(promise);
  if (err === undefined) return 'verified';
  if (!(err instanceof ArtefactVerificationError)) return `another error: ${String(err)}`;
  if (!(err instanceof LicenseSdkError)) return 'not a LicenseSdkError';
  return err.reason;
}

const label = (c: Record<string, unknown>): string => Object.entries(c).map(([k, v]) => `${k}=${JSON.stringify(v) ?? 'absent'}`).join(' ');

t.test('a license token and a receipt the service signed: their claims, typed, as the payload says', async (t) => {
  const payload = licensePayload();
  t.strictSame(await verifyLicenseToken(signer.sign(JSON.stringify(payload)), opts), payload, 'license token');
  const r = receiptPayload();
  t.strictSame(await verifyReceipt(signer.sign(JSON.stringify(r)), opts), r, 'receipt');
  const extra = { ...licensePayload(), plan: 'gold' };
  const { plan, ...known } = extra;
  t.equal(plan, 'gold');
  t.strictSame(await verifyLicenseToken(signer.sign(JSON.stringify(extra)), opts), known, 'a member the format does not name: verified, left out');
  t.strictSame(await verifyLicenseToken(license({ domains: [] }), opts).then((c) => c.domains), [], 'no domains');
  const custom = signerOf(TEST_SIGNING_KEY).signer.sign(JSON.stringify(receiptPayload({ iss: 'lisans-prod' })));
  t.equal((await verifyReceipt(custom, { jwks, issuer: 'lisans-prod' })).iss, 'lisans-prod', 'another JWT_ISSUER, when told');
});

t.test('receiptDigest: the hex SHA-256 of the payload bytes, the same whichever key signed them', async (t) => {
  const text = JSON.stringify(receiptPayload());
  const mine = signer.sign(text);
  const theirs = other.signer.sign(text);
  t.not(mine, theirs, 'two keys, two receipts');
  const digest = createHash('sha256').update(text).digest('hex');
  t.equal(await receiptDigest(mine), digest);
  t.equal(await receiptDigest(theirs), digest, 'invariant under key rotation');
  t.match(digest, /^[0-9a-f]{64}$/);
  t.equal(await reasonOf(receiptDigest('a.b')), 'MALFORMED');
  t.equal(await reasonOf(receiptDigest(`${mine.split('.')[0]}.${mine.split('.')[1]}=.sig`)), 'MALFORMED', 'padding');
});

t.test('forged and tampered: a key not in the set, another payload, another header, another signature', async (t) => {
  t.equal(await reasonOf(verifyLicenseToken(other.signer.sign(JSON.stringify(licensePayload())), opts)), 'UNKNOWN_KEY', 'signed by a key not in the set');
  t.equal(await reasonOf(verifyLicenseToken(signEd25519(OTHER_KEY, edHeader(kid), JSON.stringify(licensePayload())), opts)), 'BAD_SIGNATURE',
    'another key claiming the kid of the set\'s');
  const [h, p, s] = license().split('.') as [string, string, string];
  const richer = seg(JSON.stringify(licensePayload({ total_quota: 100000, remaining_quota: 99993 })));
  t.equal(await reasonOf(verifyLicenseToken(`${h}.${richer}.${s}`, opts)), 'BAD_SIGNATURE', 'the payload replaced');
  t.equal(await reasonOf(verifyLicenseToken(`${seg(JSON.stringify({ alg: 'EdDSA', kid }))}.${p}.${s}`, opts)), 'BAD_SIGNATURE',
    'the header re-written (same meaning, other bytes)');
  const flipped = `${s.slice(0, 10)}${s[10] === 'A' ? 'B' : 'A'}${s.slice(11)}`;
  t.equal(await reasonOf(verifyLicenseToken(`${h}.${p}.${flipped}`, opts)), 'BAD_SIGNATURE', 'a character of the signature');
  t.equal(await reasonOf(verifyLicenseToken(`${h}.${p}.${s.slice(0, -4)}`, opts)), 'BAD_SIGNATURE', 'a signature cut short');
  // base64url's last character carries spare bits: a lenient decoder reads both spellings as the same bytes
  const respelled = (segment: string): string => {
    const last = segment.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    return segment.slice(0, -1) + alphabet[alphabet.indexOf(last) + 1];
  };
  t.equal(s.length % 4, 2, 'a signature of 86 characters: 4 spare bits in the last');
  t.equal(await reasonOf(verifyLicenseToken(`${h}.${p}.${respelled(s)}`, opts)), 'BAD_SIGNATURE', 'the signature spelled otherwise');
  t.equal(await reasonOf(verifyLicenseToken(`${h}.${p}.${s}`, opts)), 'verified', 'and the token itself verifies');
});

t.test('headers: alg none, HS256 keyed with the public key, RS256, jku/jwk/x5u/crit, a repeated alg, no kid', async (t) => {
  const payload = JSON.stringify(licensePayload());
  const none = `${seg(JSON.stringify({ alg: 'none', typ: 'JWT', kid }))}.${seg(payload)}`;
  t.equal(await reasonOf(verifyLicenseToken(`${none}.`, opts)), 'MALFORMED', 'alg none, empty signature');
  t.equal(await reasonOf(verifyLicenseToken(`${none}.${license().split('.')[2]}`, opts)), 'UNSUPPORTED_HEADER', 'alg none, a signature');
  for (const secret of [x, Buffer.from(x, 'base64url').toString('latin1'), signer.jwksBody]) {
    const forged = signHs256(secret, JSON.stringify({ alg: 'HS256', typ: 'JWT', kid }), payload);
    t.equal(await reasonOf(verifyLicenseToken(forged, opts)), 'UNSUPPORTED_HEADER', 'HS256 with the public key as its secret');
  }
  t.equal(await reasonOf(verifyLicenseToken(signEd25519(TEST_SIGNING_KEY, JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }), payload), opts)),
    'UNSUPPORTED_HEADER', 'RS256');
  const extras: Record<string, unknown>[] = [
    { jku: 'https://evil.example.org/jwks.json' }, { jwk: { kty: 'OKP', crv: 'Ed25519', x } }, { x5u: 'https://evil.example.org/c.pem' },
    { crit: ['exp'] }, { b64: false }, { cty: 'JWT' }, { x5c: ['MIIB'] },
  ];
  for (const extra of extras) {
    const token = signEd25519(TEST_SIGNING_KEY, JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid, ...extra }), payload);
    t.equal(await reasonOf(verifyLicenseToken(token, opts)), 'UNSUPPORTED_HEADER', `${Object.keys(extra)[0]} in the header, validly signed`);
  }
  t.equal(await reasonOf(verifyLicenseToken(signEd25519(TEST_SIGNING_KEY, `{"alg":"none","alg":"EdDSA","typ":"JWT","kid":"${kid}"}`, payload), opts)),
    'MALFORMED', 'alg twice');
  t.equal(await reasonOf(verifyLicenseToken(signEd25519(TEST_SIGNING_KEY, JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }), payload), opts)),
    'UNSUPPORTED_HEADER', 'no kid');
  t.equal(await reasonOf(verifyLicenseToken(signEd25519(TEST_SIGNING_KEY, JSON.stringify({ alg: 'EdDSA', typ: 'JOSE', kid }), payload), opts)),
    'UNSUPPORTED_HEADER', 'typ other than JWT');
  t.strictSame(await verifyLicenseToken(signEd25519(TEST_SIGNING_KEY, JSON.stringify({ kid, alg: 'EdDSA' }), payload), opts), JSON.parse(payload),
    'members in another order, typ left out: the same header to a verifier');
});

t.test('license tokens: expired (with the tolerance), inactive, another issuer, the clock given', async (t) => {
  const now = nowSeconds();
  t.equal(await reasonOf(verifyLicenseToken(license({ exp: now - 61 }), opts)), 'EXPIRED', 'past exp by more than 60 s');
  t.equal((await verifyLicenseToken(license({ exp: now - 30 }), opts)).exp, now - 30, 'within the default 60 s');
  t.equal(await reasonOf(verifyLicenseToken(license({ exp: now - 30 }), { ...opts, clockToleranceSeconds: 0 })), 'EXPIRED', 'tolerance 0');
  const token = license({ exp: now + 3600 });
  t.equal(await reasonOf(verifyLicenseToken(token, { ...opts, now: new Date((now + 3661) * 1000) })), 'EXPIRED', 'a clock given, an hour on');
  t.equal((await verifyLicenseToken(token, { ...opts, now: new Date((now + 3600) * 1000) })).exp, now + 3600, 'at exp: still valid');
  const expired = license({ exp: now - 3600 });
  for (const bad of [{ now: new Date(Number.NaN) }, { clockToleranceSeconds: Number.NaN }, { clockToleranceSeconds: -1 }]) {
    const err = await rejection(verifyLicenseToken(expired, { ...opts, ...bad }));
    t.ok(err instanceof LicenseSdkError && !(err instanceof ArtefactVerificationError), `${Object.keys(bad)[0]} unusable: the caller's error, not a pass`);
  }
  t.equal(await reasonOf(verifyLicenseToken(license({ active: false }), opts)), 'INACTIVE');
  t.equal(await reasonOf(verifyLicenseToken(license({ iss: 'another-service' }), opts)), 'WRONG_ISSUER');
  t.equal(await reasonOf(verifyLicenseToken(license({ iss: undefined }), opts)), 'WRONG_ISSUER', 'no iss');
  t.equal(await reasonOf(verifyLicenseToken(license(), { ...opts, issuer: 'lisans-prod' })), 'WRONG_ISSUER', 'another issuer expected');
  t.equal(await reasonOf(verifyReceipt(receipt({ iss: 'another-service' }), opts)), 'WRONG_ISSUER', 'receipts too');
  t.equal((await verifyReceipt(receipt({ iat: now - 400 * 86400 }), opts)).iat, now - 400 * 86400, 'receipts do not expire');
});

t.test('a receipt is never a license token, nor the reverse, nor any other typ', async (t) => {
  t.equal(await reasonOf(verifyLicenseToken(receipt(), opts)), 'WRONG_ARTEFACT', 'receipt as license token');
  t.equal(await reasonOf(verifyReceipt(license(), opts)), 'WRONG_ARTEFACT', 'license token as receipt');
  // a receipt carrying every member of a license token is still a receipt
  const both = signer.sign(JSON.stringify({ ...licensePayload(), ...receiptPayload() }));
  t.equal(await reasonOf(verifyLicenseToken(both, opts)), 'WRONG_ARTEFACT', 'a receipt with license members');
  for (const typ of ['sign', 'access', 'License', undefined, 1]) {
    t.equal(await reasonOf(verifyLicenseToken(license({ typ }), opts)), 'WRONG_ARTEFACT', `typ ${String(typ)}`);
  }
});

t.test('signed, but not the format: repeated members, members of the wrong type', async (t) => {
  const text = JSON.stringify(licensePayload()).replace('"active":true', '"active":false,"active":true');
  t.equal(await reasonOf(verifyLicenseToken(signer.sign(text), opts)), 'MALFORMED', 'active twice');
  t.equal(await reasonOf(verifyLicenseToken(signer.sign('[1,2]'), opts)), 'MALFORMED', 'an array');
  t.equal(await reasonOf(verifyLicenseToken(signer.sign('\uFEFF{}'), opts)), 'MALFORMED', 'a BOM');
  const licenseCases: Record<string, unknown>[] = [
    { used_quota: '7' }, { total_quota: 1.5 }, { remaining_quota: -1 }, { exp: undefined }, { license_exp: null }, { active: 'true' },
    { domains: ['a', 1] }, { domains: 'eczane.example.com' }, { firma_id: 7 }, { firma_adi: undefined }, { iat: 2 ** 53 },
  ];
  for (const c of licenseCases) {
    t.equal(await reasonOf(verifyLicenseToken(license(c), opts)), 'INVALID_CLAIMS', `license ${label(c)}`);
  }
  const receiptCases: Record<string, unknown>[] = [
    { imza_tipi: 2 }, { imza_tipi: '0' }, { jti: undefined }, { documents: [{ name: 'a.xml', sha256: 'A'.repeat(64) }] },
    { documents: [{ name: 'a.xml', sha256: 'a'.repeat(63) }] }, { documents: [{ sha256: 'a'.repeat(64) }] }, { documents: {} },
    { used_quota: '8' },
  ];
  for (const c of receiptCases) {
    t.equal(await reasonOf(verifyReceipt(receipt(c), opts)), 'INVALID_CLAIMS', `receipt ${label(c)}`);
  }
});

t.test('the JWKS given: keys it cannot use are skipped; none usable is JWKS_UNAVAILABLE', async (t) => {
  const mixed = { keys: [{ kty: 'RSA', kid: 'r', n: 'x', e: 'AQAB' }, { ...jwks.keys[0]!, use: 'enc', kid: 'enc' }, ...jwks.keys] };
  t.equal((await verifyLicenseToken(license(), { jwks: mixed })).typ, 'license', 'the Ed25519 signing key among others');
  t.equal(await reasonOf(verifyLicenseToken(license(), { jwks: { keys: [] } })), 'JWKS_UNAVAILABLE', 'no key');
  t.equal(await reasonOf(verifyLicenseToken(license(), { jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid }] } })), 'JWKS_UNAVAILABLE',
    'not a public key');
  t.equal(await reasonOf(verifyLicenseToken(license(), { jwks: other.jwks })), 'UNKNOWN_KEY', 'another service\'s keys');
  t.equal(await reasonOf(verifyLicenseToken(license(), { jwks: { keys: [...other.jwks.keys, ...jwks.keys] } })), 'verified', 'both services\' keys');
});
