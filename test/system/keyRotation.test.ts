import { randomBytes } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config/vars.js';
import { LIVE_COUNTS, startHarness, testEnv, type Harness } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { craftAccessToken, craftJwt, decodeJwt, ISSUER, PUBLISHED_HEADER, signatureValid } from '../helpers/jwt.js';
import { expectCodedError, expectMessageError, MSG, type Asserts } from '../helpers/shapes.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';

// Key rotation (docs/operations.md#key-rotation): JWT_SECRETS lists kid:secret pairs, the first signs,
// every one verifies, and each token's header names its key. The procedure, one server after
// the other on the same Redis and Postgres: add the new key second, sign with it (listed
// first, the old one still verifying), then retire the old one. Every token carries
// iss = JWT_ISSUER, checked on verify. A kid-less token (the published header,
// docs/api.md#sign-and-access-tokens) is verified with whichever key signs now, at every step.

const S1 = randomBytes(32).toString('hex');
const S2 = randomBytes(32).toString('hex');

/** The header of every token the service writes, exactly. */
const headerOf = (kid: string): Record<string, unknown> => ({ alg: 'HS256', typ: 'JWT', kid });

/** The token's payload signed again with `secret`, under a header naming `kid`; `claims` win. */
function resigned(token: string, kid: string, secret: string, claims: Record<string, unknown> = {}): string {
  return craftJwt(headerOf(kid), { ...decodeJwt(token).payload, ...claims }, secret);
}

function expectSignedBy(t: Asserts, token: string, kid: string, secret: string, what: string): void {
  const jwt = decodeJwt(token);
  t.strictSame(jwt.header, headerOf(kid), `${what}: header exactly {alg, typ, kid: ${kid}}`);
  t.ok(signatureValid(token, secret), `${what}: HMAC-SHA256 with the secret of ${kid}`);
  t.equal(jwt.payload.iss, ISSUER, `${what}: iss ${ISSUER}`);
}

function expectInvalidToken(t: Asserts, res: Answer, what: string): void {
  expectCodedError(t, res, 401, 'INVALID_TOKEN', what);
}

/** The token's claims signed with `secret` under the published header, without a kid. */
function kidless(token: string, secret: string): string {
  return craftJwt(PUBLISHED_HEADER, { ...decodeJwt(token).payload }, secret);
}

/**
 * A kid-less access token signed with each secret, at sign-token, and a kid-less sign token
 * (of `signToken`, unspent) at validate: accepted with the secret that signs now, refused
 * with the other, spending nothing.
 */
async function expectKidlessVerifiedBy(
  t: Asserts, h: Harness, licenseKey: string, accessToken: string, signToken: string, signing: string, other: string, step: string,
): Promise<void> {
  expectInvalidToken(t, await h.signToken(kidless(accessToken, other)), `${step}: a kid-less access token of the key that does not sign`);
  const ok = await h.signToken(kidless(accessToken, signing));
  t.equal(ok.status, 200, `${step}: a kid-less access token of the signing key is accepted (${ok.text})`);
  const before = await usedQuota(h, licenseKey);
  expectMessageError(t, await h.validate(kidless(signToken, other)), [401], `${step}: a kid-less sign token of the key that does not sign`, MSG.INVALID);
  t.equal(await usedQuota(h, licenseKey), before, `${step}: refused, it spent nothing`);
  const v = await h.validate(kidless(signToken, signing));
  t.equal(v.status, 200, `${step}: the same claims, kid-less, signed with the signing key, redeem (${v.text})`);
}

async function usedQuota(h: Harness, licenseKey: string): Promise<number> {
  const res = await h.checkQuota(licenseKey);
  if (res.status !== 200) throw new Error(`check-quota: ${res.status} ${res.text}`);
  return res.body.data.usedQuota as number;
}

t.test('rotation: k1, k2 added, k2 signing with k1 still verifying, k1 retired', async (t) => {
  const a = await startHarness(t, 'rot', { ...LIVE_COUNTS, JWT_SECRET: '', JWT_SECRETS: `k1:${S1}` });
  const shared = { ...LIVE_COUNTS, REDIS_PREFIX: a.prefix, PG_SCHEMA: a.config.pgSchema, JWT_SECRET: '' };
  const lic = await a.createLicense({ totalQuota: 50 });

  const fromA = await getTokenPair(a, lic);
  const spareA = await signOne(a, fromA.accessToken); // never redeemed before C
  expectSignedBy(t, fromA.accessToken, 'k1', S1, 'A\'s access token');
  expectSignedBy(t, fromA.signToken, 'k1', S1, 'A\'s sign token');
  expectSignedBy(t, spareA, 'k1', S1, 'A\'s sign-token token');
  await expectKidlessVerifiedBy(t, a, lic.licenseKey, fromA.accessToken, await signOne(a, fromA.accessToken), S1, S2, 'k1 alone');
  await a.service.stop();

  // step 1: k2 only verifies (another instance may already sign with it)
  const added = await startHarness(t, 'rot-add', { ...shared, JWT_SECRETS: `k1:${S1},k2:${S2}` });
  const stillK1 = await added.signToken(fromA.accessToken);
  t.equal(stillK1.status, 200, `with k2 added, A's access token works (${stillK1.text})`);
  expectSignedBy(t, stillK1.body.signToken, 'k1', S1, 'with k2 added, the sign token');
  const k2Access = craftJwt(headerOf('k2'), { ...decodeJwt(fromA.accessToken).payload }, S2);
  t.equal((await added.signToken(k2Access)).status, 200, 'with k2 added, a k2 access token is accepted');
  await expectKidlessVerifiedBy(t, added, lic.licenseKey, fromA.accessToken, await signOne(added, fromA.accessToken), S1, S2, 'step 1 (k2 added, k1 signs)');
  await added.service.stop();

  const b = await startHarness(t, 'rot-b', { ...shared, JWT_SECRETS: `k2:${S2},k1:${S1}` });
  const redeemed = await b.validate(fromA.signToken);
  t.equal(redeemed.status, 200, `B redeems A's sign token (${redeemed.text})`);
  t.equal(redeemed.body?.success, true);
  const signedOnB = await b.signToken(fromA.accessToken);
  t.equal(signedOnB.status, 200, `B issues a sign token on A's access token (${signedOnB.text})`);
  expectSignedBy(t, signedOnB.body.signToken, 'k2', S2, 'B\'s sign token for A\'s access token');
  t.notOk(signatureValid(signedOnB.body.signToken, S1), 'not signed with the old secret');
  t.equal((await b.history(lic.licenseKey, fromA.accessToken)).status, 200, 'B serves history on A\'s access token');

  const fromB = await getTokenPair(b, lic);
  expectSignedBy(t, fromB.accessToken, 'k2', S2, 'B\'s access token');
  expectSignedBy(t, fromB.signToken, 'k2', S2, 'B\'s sign token');
  // k1 still verifies tokens that name it, but a kid-less one is verified with k2 alone
  await expectKidlessVerifiedBy(t, b, lic.licenseKey, fromA.accessToken, await signOne(b, fromA.accessToken), S2, S1, 'step 2 (k2 signs, k1 verifies)');
  await b.service.stop();

  const c = await startHarness(t, 'rot-c', { ...shared, JWT_SECRETS: `k2:${S2}` });
  const usedBefore = await usedQuota(c, lic.licenseKey);
  expectMessageError(t, await c.validate(spareA), [401], 'C: a k1 sign token', MSG.INVALID);
  t.equal(await usedQuota(c, lic.licenseKey), usedBefore, 'the refused k1 sign token spent nothing');
  expectInvalidToken(t, await c.signToken(fromA.accessToken), 'C: sign-token with a k1 access token');
  expectInvalidToken(t, await c.history(lic.licenseKey, fromA.accessToken), 'C: history with a k1 access token');

  const v = await c.validate(fromB.signToken);
  t.equal(v.status, 200, `C redeems B's k2 sign token (${v.text})`);
  t.equal(await usedQuota(c, lic.licenseKey), usedBefore + 1, 'and spends one');
  const signedOnC = await c.signToken(fromB.accessToken);
  t.equal(signedOnC.status, 200, `C issues a sign token on B's k2 access token (${signedOnC.text})`);
  expectSignedBy(t, signedOnC.body.signToken, 'k2', S2, 'C\'s sign token');
  t.equal((await c.history(lic.licenseKey, fromB.accessToken)).status, 200, 'C serves history on B\'s access token');
  await expectKidlessVerifiedBy(t, c, lic.licenseKey, fromB.accessToken, await signOne(c, fromB.accessToken), S2, S1, 'step 3 (k1 retired)');
  await c.drainWorker();
});

/** The default settings (JWT_SECRET alone, the default issuer): one service for the tests of them. */
const plain = await startHarness(t, 'rot-default', LIVE_COUNTS);

t.test('JWT_SECRET alone signs with kid "default"', async (t) => {
  const h = plain;
  const lic = await h.createLicense();
  const pair = await getTokenPair(h, lic);
  const secret = h.config.jwtKeys[0]!.secret;
  expectSignedBy(t, pair.accessToken, 'default', secret, 'access token');
  expectSignedBy(t, pair.signToken, 'default', secret, 'sign token');
});

t.test('a token must name the kid of the key that signed it', async (t) => {
  const h = await startHarness(t, 'rot-kid', { ...LIVE_COUNTS, JWT_SECRET: '', JWT_SECRETS: `k2:${S2},k1:${S1}` });
  const lic = await h.createLicense();
  const pair = await getTokenPair(h, lic);

  for (const [kid, secret, what] of [['k1', S2, 'kid k1, signed with k2\'s secret'], ['k2', S1, 'kid k2, signed with k1\'s secret']]) {
    const access = craftAccessToken(lic.firmaId, secret as string);
    expectInvalidToken(t, await h.signToken(resigned(access, kid as string, secret as string)), `sign-token: ${what}`);
    expectInvalidToken(t, await h.history(lic.licenseKey, resigned(access, kid as string, secret as string)), `history: ${what}`);
    expectMessageError(t, await h.validate(resigned(pair.signToken, kid as string, secret as string)), [401], `validate: ${what}`, MSG.INVALID);
  }
  const noKid = kidless(craftAccessToken(lic.firmaId, S1), S1);
  expectInvalidToken(t, await h.signToken(noKid), 'sign-token: a kid-less token signed with k1, which verifies but does not sign');
  const unknownKid = resigned(craftAccessToken(lic.firmaId, S1), 'k3', S1);
  expectInvalidToken(t, await h.signToken(unknownKid), 'sign-token: a kid that is not listed');
  expectMessageError(t, await h.validate(resigned(pair.signToken, 'k3', S1)), [401], 'validate: a kid that is not listed', MSG.INVALID);
  // the same claims under a matching kid pass: the refusals above were for the mismatch
  const good = resigned(craftAccessToken(lic.firmaId, S1), 'k1', S1);
  t.equal((await h.signToken(good)).status, 200, 'sign-token: kid k1 with k1\'s secret');
  const v = await h.validate(resigned(pair.signToken, 'k1', S1));
  t.equal(v.status, 200, `validate: the sign token under kid k1 with k1's secret, unspent by the refusals (${v.text})`);
});

t.test('iss must be JWT_ISSUER', async (t) => {
  t.test('default issuer: another iss, or none, is refused', async (t) => {
    const h = plain;
    const secret = h.config.jwtKeys[0]!.secret;
    const lic = await h.createLicense();
    const pair = await getTokenPair(h, lic);
    for (const [what, iss] of [['iss "other"', 'other'], ['no iss', undefined], ['iss of another case', ISSUER.toUpperCase()]] as const) {
      const access = craftAccessToken(lic.firmaId, secret, { iss });
      expectInvalidToken(t, await h.signToken(access), `sign-token: ${what}`);
      expectInvalidToken(t, await h.history(lic.licenseKey, access), `history: ${what}`);
      expectMessageError(t, await h.validate(resigned(pair.signToken, 'default', secret, { iss })), [401], `validate: ${what}`, MSG.INVALID);
    }
    t.equal((await h.signToken(craftAccessToken(lic.firmaId, secret))).status, 200, `sign-token: iss ${ISSUER} is accepted`);
    t.equal((await h.validate(pair.signToken)).status, 200, 'validate: the sign token itself, unspent by the refusals');
  });

  t.test('JWT_ISSUER=custom: tokens carry it, license-service tokens are refused', async (t) => {
    const h = await startHarness(t, 'rot-custom', { ...LIVE_COUNTS, JWT_ISSUER: 'custom' });
    const secret = h.config.jwtKeys[0]!.secret;
    const lic = await h.createLicense();
    const pair = await getTokenPair(h, lic);
    t.equal(decodeJwt(pair.accessToken).payload.iss, 'custom', 'access token: iss custom');
    t.equal(decodeJwt(pair.signToken).payload.iss, 'custom', 'sign token: iss custom');
    t.ok(signatureValid(pair.accessToken, secret), 'signed with the secret');
    const theirs = craftAccessToken(lic.firmaId, secret);
    expectInvalidToken(t, await h.signToken(theirs), `sign-token: iss ${ISSUER}`);
    expectInvalidToken(t, await h.history(lic.licenseKey, theirs), `history: iss ${ISSUER}`);
    expectMessageError(t, await h.validate(resigned(pair.signToken, 'default', secret, { iss: ISSUER })), [401], `validate: iss ${ISSUER}`, MSG.INVALID);
    t.equal((await h.signToken(pair.accessToken)).status, 200, 'sign-token: its own access token');
    t.equal((await h.validate(pair.signToken)).status, 200, 'validate: its own sign token');
  });
});

t.test('loadConfig refuses bad key settings, naming the variable', async (t) => {
  /** The ConfigError loadConfig throws for these overrides, or null when it accepts them. */
  function refusal(overrides: Record<string, string>): Error | null {
    try {
      loadConfig(testEnv('rotcfg', overrides));
      return null;
    } catch (err) {
      return err as Error;
    }
  }
  const refused: [string, Record<string, string>, RegExp][] = [
    ['both JWT_SECRET and JWT_SECRETS', { JWT_SECRETS: `k1:${S1}` }, /JWT_SECRETS.*JWT_SECRET\b|JWT_SECRET\b.*JWT_SECRETS/],
    ['a secret of 31 bytes', { JWT_SECRET: '', JWT_SECRETS: `k1:${'x'.repeat(31)}` }, /JWT_SECRETS/],
    ['a second secret of 31 bytes', { JWT_SECRET: '', JWT_SECRETS: `k1:${S1},k2:${'x'.repeat(31)}` }, /JWT_SECRETS/],
    ['a secret of 31 bytes in 16 characters', { JWT_SECRET: '', JWT_SECRETS: `k1:${'ş'.repeat(15)}x` }, /JWT_SECRETS/],
    ['JWT_SECRET of 31 bytes', { JWT_SECRET: 'x'.repeat(31) }, /JWT_SECRET/],
    ['a duplicate kid', { JWT_SECRET: '', JWT_SECRETS: `k1:${S1},k1:${S2}` }, /JWT_SECRETS/],
    ['kid "a b"', { JWT_SECRET: '', JWT_SECRETS: `a b:${S1}` }, /JWT_SECRETS/],
    ['an empty kid', { JWT_SECRET: '', JWT_SECRETS: `:${S1}` }, /JWT_SECRETS/],
    ['a kid of 65 characters', { JWT_SECRET: '', JWT_SECRETS: `${'k'.repeat(65)}:${S1}` }, /JWT_SECRETS/],
    ['an entry without ":"', { JWT_SECRET: '', JWT_SECRETS: S1 }, /JWT_SECRETS/],
    ['a second entry without ":"', { JWT_SECRET: '', JWT_SECRETS: `k1:${S1},${S2}` }, /JWT_SECRETS/],
    ['JWT_ISSUER with a space', { JWT_ISSUER: 'license service' }, /JWT_ISSUER/],
  ];
  for (const [what, overrides, names] of refused) {
    const err = refusal(overrides);
    t.ok(err instanceof ConfigError, `${what}: refused with a ConfigError (${String(err)})`);
    t.match(err?.message ?? '', names, `${what}: the message names the variable`);
  }

  // what is accepted next to each refusal
  const k64 = 'k'.repeat(64);
  const TWO_BYTE_32 = 'şığüöçŞİĞÜÖÇâîûê'; // 16 characters of two bytes each, none repeated (a repeated one is refused as a placeholder)
  const keys = loadConfig(testEnv('rotcfg', { JWT_SECRET: '', JWT_SECRETS: `k2:${S2},${k64}:${S1},A-z.0_9:${TWO_BYTE_32}` })).jwtKeys;
  t.strictSame(keys, [{ kid: 'k2', secret: S2 }, { kid: k64, secret: S1 }, { kid: 'A-z.0_9', secret: TWO_BYTE_32 }],
    'kids of 64 characters and of letters, digits, ".", "_", "-"; a secret of 32 bytes; listed in order');
  t.strictSame(loadConfig(testEnv('rotcfg', { JWT_SECRET: S1 })).jwtKeys, [{ kid: 'default', secret: S1 }], 'JWT_SECRET=s is default:s');
  t.equal(loadConfig(testEnv('rotcfg', { JWT_ISSUER: 'custom' })).jwtIssuer, 'custom', 'JWT_ISSUER=custom accepted');
  t.equal(loadConfig(testEnv('rotcfg')).jwtIssuer, ISSUER, `JWT_ISSUER defaults to ${ISSUER}`);
});
