import fc from 'fast-check';
import {
  ArtefactVerificationError, receiptDigest, verifyLicenseToken, verifyReceipt, type VerifyOptions,
} from '@license-service/client';
import t from 'tap';
import { edHeader, licensePayload, receiptPayload, seg, signEd25519, signerOf } from '../helpers/artefacts.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';
import { newSigningKey, TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// A verifier is handed hostile strings: whatever the input, verifyLicenseToken and
// verifyReceipt resolve to claims of their own artefact or throw an ArtefactVerificationError,
// never anything else (a TypeError, a RangeError, a WebCrypto DOMException); receiptDigest
// gives 64 hex digits or throws the same. And a valid artefact changed in any way, by a
// single character or more, never verifies: one spelling per signed token.

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const settings = { seed: FUZZ_SEED, numRuns: RUNS };

const { signer, jwks } = signerOf(TEST_SIGNING_KEY);
const FORGER = newSigningKey();
const opts: VerifyOptions = { jwks };
const validLicense = signer.sign(JSON.stringify(licensePayload()));
const validReceipt = signer.sign(JSON.stringify(receiptPayload()));

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const utf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 200 });
const jwsChar = fc.constantFrom(...B64URL, '.', '=', '+', '/', ' ', '\n', '%');
const segment = fc.string({ unit: jwsChar, maxLength: 120 });
const jwsLike = fc.tuple(segment, segment, segment).map(([a, b, c]) => `${a}.${b}.${c}`);

/** A valid artefact with one change: a character replaced, removed or added, or segments swapped. */
const mutated = fc.tuple(fc.constantFrom(validLicense, validReceipt), fc.nat(), fc.constantFrom(...B64URL, '.', '='), fc.nat(3)).map(
  ([token, at, c, how]) => {
    const i = at % token.length;
    if (how === 0) return token.slice(0, i) + c + token.slice(i + 1);
    if (how === 1) return token.slice(0, i) + token.slice(i + 1);
    if (how === 2) return token.slice(0, i) + c + token.slice(i);
    const [h, p, s] = token.split('.');
    return [p, h, s].join('.');
  },
);

/** Headers and payloads of every kind, signed by the set's key, by another, or not at all. */
const alg = fc.oneof(fc.constantFrom('EdDSA', 'none', 'HS256', 'RS256', 'ES256', 'eddsa'), fc.string({ maxLength: 8 }), fc.integer());
const kid = fc.oneof(fc.constant(signer.kid), fc.string({ maxLength: 44 }), fc.constant(undefined));
const header = fc.oneof(
  fc.record({ alg, typ: fc.constantFrom('JWT', 'jwt', undefined), kid }).map((h) => JSON.stringify(h)),
  fc.tuple(fc.record({ alg, kid }), fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }))
    .map(([h, extra]) => JSON.stringify({ ...extra, ...h })),
  fc.constant(edHeader(signer.kid)),
  fc.json({ maxDepth: 2 }),
);
const member = fc.constantFrom(...Object.keys(licensePayload()), ...Object.keys(receiptPayload()), 'documents');
const payload = fc.oneof(
  fc.constantFrom(JSON.stringify(licensePayload()), JSON.stringify(receiptPayload())),
  fc.tuple(fc.constantFrom(licensePayload(), receiptPayload()), member, fc.jsonValue({ maxDepth: 2 }))
    .map(([base, name, value]) => JSON.stringify({ ...base, [name]: value })),
  fc.json({ maxDepth: 3 }),
  utf16,
);
const crafted = fc.tuple(header, payload, fc.constantFrom('set', 'forger', 'garbage')).map(([h, p, by]) => {
  if (by === 'garbage') return `${seg(h)}.${seg(p)}.${'A'.repeat(86)}`;
  return signEd25519(by === 'set' ? TEST_SIGNING_KEY : FORGER, h, p);
});

/** 'verified', or the reason; any other error fails the property. */
async function outcome(verify: () => Promise<{ typ: string }>, typ: string): Promise<string> {
  try {
    const claims = await verify();
    if (claims.typ !== typ) throw new Error(`verified as ${typ}, but typ ${claims.typ}`);
    return 'verified';
  } catch (err) {
    if (err instanceof ArtefactVerificationError) return err.reason;
    throw err;
  }
}

async function either(token: string): Promise<[string, string]> {
  return [
    await outcome(() => verifyLicenseToken(token, opts), 'license'),
    await outcome(() => verifyReceipt(token, opts), 'receipt'),
  ];
}

t.test('any string: claims or an ArtefactVerificationError, from both verifiers and receiptDigest', async (t) => {
  const reasons = new Set<string>();
  await fc.assert(fc.asyncProperty(fc.oneof(utf16, jwsLike, mutated, crafted), async (token) => {
    for (const r of await either(token)) reasons.add(r);
    try {
      const digest = await receiptDigest(token);
      if (!/^[0-9a-f]{64}$/.test(digest)) throw new Error(`digest ${digest}`);
    } catch (err) {
      if (!(err instanceof ArtefactVerificationError)) throw err;
    }
  }), settings);
  t.pass(`${RUNS} strings (FUZZ_SEED=${FUZZ_SEED})`);
  // the generators reach past the first checks: a property that only ever saw MALFORMED would prove little
  for (const reason of ['MALFORMED', 'UNSUPPORTED_HEADER', 'UNKNOWN_KEY', 'BAD_SIGNATURE', 'WRONG_ARTEFACT', 'INVALID_CLAIMS', 'verified']) {
    t.ok(reasons.has(reason), `reached: ${reason}`);
  }
});

t.test('a valid artefact changed in any way never verifies', async (t) => {
  t.strictSame(await either(validLicense), ['verified', 'WRONG_ARTEFACT'], 'the license token itself');
  t.strictSame(await either(validReceipt), ['WRONG_ARTEFACT', 'verified'], 'the receipt itself');
  await fc.assert(fc.asyncProperty(mutated, async (token) => {
    if (token === validLicense || token === validReceipt) return; // a character replaced by itself
    const [asLicense, asReceipt] = await either(token);
    if (asLicense === 'verified' || asReceipt === 'verified') throw new Error(`a changed artefact verified: ${token}`);
  }), settings);
  t.pass(`${RUNS} changed artefacts refused (FUZZ_SEED=${FUZZ_SEED})`);
});
