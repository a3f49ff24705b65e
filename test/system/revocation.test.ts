import t from 'tap';
import { adminOk, inAYear } from '../helpers/admin.js';
import { LIVE_COUNTS, startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import { decodeJwt } from '../helpers/jwt.js';
import type { Asserts } from '../helpers/shapes.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';

// Revocation (docs/api.md#revocation): a license's token generation, raised by a password change
// or a deactivation through the admin API, revokes every access token issued before, on the
// very next request and on every instance; other changes leave access tokens working, and
// sign tokens already issued stay redeemable.

const INVALID_TOKEN_BODY = { success: false, error: { code: 'INVALID_TOKEN', message: 'Geçersiz veya süresi dolmuş erişim tokenı' } };
const NEW_PASSWORD = 'a brand new password 2024';

const genOf = (accessToken: string): unknown => decodeJwt(accessToken).payload.gen;

async function dbGeneration(h: Harness, licenseKey: string): Promise<number> {
  const [row] = await h.sql`select token_generation::int as g from licenses where license_key = ${licenseKey}`;
  if (!row) throw new Error(`no license ${licenseKey}`);
  return row.g as number;
}

function patch(h: Harness, lic: TestLicense, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  return adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, body);
}

async function expectRevoked(t: Asserts, h: Harness, lic: TestLicense, accessToken: string, what: string): Promise<void> {
  const signed = await h.signToken(accessToken);
  t.equal(signed.status, 401, `${what}: sign-token 401 (${signed.text})`);
  t.strictSame(signed.body, INVALID_TOKEN_BODY, `${what}: sign-token INVALID_TOKEN, the published body`);
  t.match(signed.headers.get('content-type') ?? '', /^application\/json/, `${what}: sign-token answers JSON`);
  const history = await h.history(lic.licenseKey, accessToken);
  t.equal(history.status, 401, `${what}: history 401 (${history.text})`);
  t.strictSame(history.body, INVALID_TOKEN_BODY, `${what}: history INVALID_TOKEN`);
}

async function expectWorks(t: Asserts, h: Harness, lic: TestLicense, accessToken: string, what: string): Promise<void> {
  const signed = await h.signToken(accessToken);
  t.equal(signed.status, 200, `${what}: sign-token 200 (${signed.text})`);
  const history = await h.history(lic.licenseKey, accessToken);
  t.equal(history.status, 200, `${what}: history 200 (${history.text})`);
}

// one service for the file, each test on licenses of its own (the race below needs its own limits)
const h = await startHarness(t, 'revoke', { ...LIVE_COUNTS, RATE_GET_TOKEN_FAILURES_PER_MIN: '0' });

t.test('revocation on one instance', async (t) => {

  t.test('a password change revokes the access tokens issued before, at once', async (t) => {
    const lic = await h.createLicense({ totalQuota: 20 });
    const before = await getTokenPair(h, lic);
    const spare = await signOne(h, before.accessToken);
    t.equal(genOf(before.accessToken), 0, 'a new license\'s access tokens carry gen 0');
    await expectWorks(t, h, lic, before.accessToken, 'before the change');
    t.equal(await dbGeneration(h, lic.licenseKey), 0, 'Postgres: generation 0');

    await patch(h, lic, { password: NEW_PASSWORD });
    await expectRevoked(t, h, lic, before.accessToken, 'the next request after the password change');
    t.equal(await dbGeneration(h, lic.licenseKey), 1, 'Postgres: generation raised to 1');

    const old = await h.getToken(lic.licenseKey, lic.password);
    t.equal(old.status, 401, 'get-token with the old password: 401');
    t.equal(old.body?.error?.code, 'INVALID_CREDENTIALS', 'INVALID_CREDENTIALS');
    const fresh = await getTokenPair(h, { licenseKey: lic.licenseKey, password: NEW_PASSWORD });
    t.equal(genOf(fresh.accessToken), 1, 'the new password\'s access token carries gen 1');
    await expectWorks(t, h, lic, fresh.accessToken, 'the new access token');

    for (const [what, token] of [['get-token\'s', before.signToken], ['sign-token\'s', spare]]) {
      const v = await h.validate(token);
      t.equal(v.status, 200, `a sign token issued before the change (${what}) still redeems (${v.text})`);
    }
    await expectRevoked(t, h, lic, before.accessToken, 'still, after a new get-token');
  });

  t.test('deactivation revokes; reactivation does not bring the old token back', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    await expectWorks(t, h, lic, accessToken, 'before');

    await patch(h, lic, { isActive: false });
    // INVALID_TOKEN, not LICENSE_INACTIVE: the token is revoked, not merely refused while inactive
    await expectRevoked(t, h, lic, accessToken, 'after deactivation');
    t.equal(await dbGeneration(h, lic.licenseKey), 1, 'Postgres: generation 1');

    await patch(h, lic, { isActive: true });
    await expectRevoked(t, h, lic, accessToken, 'after reactivation');
    t.equal(await dbGeneration(h, lic.licenseKey), 1, 'Postgres: reactivation leaves the generation');
    const fresh = await getTokenPair(h, lic);
    t.equal(genOf(fresh.accessToken), 1, 'a new get-token gives gen 1');
    await expectWorks(t, h, lic, fresh.accessToken, 'the new access token');
  });

  t.test('changes that do not revoke', async (t) => {
    const lic = await h.createLicense();
    const { accessToken } = await getTokenPair(h, lic);
    const changes: [string, () => Promise<unknown>][] = [
      ['organizationName', () => patch(h, lic, { organizationName: 'Yeni Ünvan A.Ş.' })],
      ['domains', () => patch(h, lic, { domains: ['example.com'] })],
      ['expiryDate', () => patch(h, lic, { expiryDate: new Date(Date.now() + 200 * 86400_000).toISOString() })],
      ['a quota purchase', () => adminOk(h, 'POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 })],
      ['isActive:true on an active license', () => patch(h, lic, { isActive: true })],
      ['all of them at once', () => patch(h, lic, { organizationName: 'Ünvan', domains: [], expiryDate: inAYear(), isActive: true })],
    ];
    for (const [what, change] of changes) {
      await change();
      await expectWorks(t, h, lic, accessToken, `after ${what}`);
      t.equal(await dbGeneration(h, lic.licenseKey), 0, `Postgres: ${what} leaves the generation at 0`);
    }
  });

  t.test('Postgres token_generation: raised once per revoking change', async (t) => {
    const lic = await h.createLicense();
    const steps: [string, Record<string, unknown>, number][] = [
      ['organizationName', { organizationName: 'Bir' }, 0],
      ['password', { password: NEW_PASSWORD }, 1],
      ['password and organizationName', { password: `${NEW_PASSWORD}!`, organizationName: 'İki' }, 2],
      ['isActive:false', { isActive: false }, 3],
      ['isActive:true', { isActive: true }, 3],
      ['password and isActive:false together', { password: `${NEW_PASSWORD}?`, isActive: false }, 4],
      ['isActive:true again', { isActive: true }, 4],
    ];
    for (const [what, body, expected] of steps) {
      await patch(h, lic, body);
      t.equal(await dbGeneration(h, lic.licenseKey), expected, `after ${what}: generation ${expected}`);
    }
    const fresh = await getTokenPair(h, { licenseKey: lic.licenseKey, password: `${NEW_PASSWORD}?` });
    t.equal(genOf(fresh.accessToken), 4, 'a new access token carries the Postgres generation');
  });

  await h.drainWorker();
});

t.test('every instance refuses a revoked token on its next request', async (t) => {
  const a = h;
  const b = await startHarness(t, 'revoke-b', {
    ...LIVE_COUNTS, REDIS_PREFIX: a.prefix, PG_SCHEMA: a.config.pgSchema, JWT_SECRET: a.config.jwtKeys[0]!.secret, RUN_WORKER: '0',
  });
  for (const [what, body] of [['a password change', { password: NEW_PASSWORD }], ['a deactivation', { isActive: false }]] as const) {
    const lic = await a.createLicense();
    const { accessToken } = await getTokenPair(a, lic);
    await expectWorks(t, b, lic, accessToken, `B, before ${what}`); // B's copy of the license is warm
    await patch(a, lic, body);
    await expectRevoked(t, b, lic, accessToken, `B, at once after ${what} through A`);
    await expectRevoked(t, a, lic, accessToken, `A, after ${what}`);
  }
  await a.drainWorker();
});

// The race the generation closes: get-token reads the hash and the generation together, checks
// the password (slow: the hasher), then issues only if the generation is unchanged. The PATCH
// is sent first, so its new hash queues in the hasher ahead of the get-tokens' checks, while
// the get-tokens have already read the old credentials: their checks of the old password
// succeed after the change. The tokens-issued counter tells them apart: it counts every
// get-token whose password checked out (lua/loginGranted.lua), issued or not.
t.test('a get-token racing a password change hands out no working access token of the old password', async (t) => {
  const race = await startHarness(t, 'revoke-race', { ...LIVE_COUNTS, RATE_GET_TOKEN_PER_MIN: '100000', PASSWORD_QUEUE_MAX: '1000' });
  const lic = await race.createLicense({ totalQuota: 1000 });
  const checkedOut = async (): Promise<number> => Number((await race.redis.get(race.keys.rateGetToken(lic.licenseKey))) ?? 0);
  const probe = await race.getToken(lic.licenseKey, 'a wrong password 123');
  t.equal(probe.status, 401, 'a wrong password: 401');
  t.equal(await checkedOut(), 0, 'and not counted as a login that checked out (the counter this test reads)');

  const [, ...answers] = await Promise.all([
    patch(race, lic, { password: NEW_PASSWORD }),
    ...Array.from({ length: 24 }, () => race.getToken(lic.licenseKey, lic.password)),
  ]);
  const handedOut = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 401);
  t.equal(handedOut.length + refused.length, answers.length, `only 200 and 401 (${answers.map((a) => a.status).join(',')})`);
  for (const r of refused) t.equal(r.body?.error?.code, 'INVALID_CREDENTIALS', '401 INVALID_CREDENTIALS');
  const checkedOutButRefused = (await checkedOut()) - handedOut.length;
  t.ok(checkedOutButRefused >= 1,
    `the race happened: get-tokens whose old password checked out were refused (${checkedOutButRefused} of ${refused.length} refusals; ${handedOut.length} answered 200)`);

  for (const [i, got] of handedOut.entries()) {
    const access = got.body.accessToken as string;
    t.equal(genOf(access), 0, `200 #${i}: its access token is of the old generation`);
    await expectRevoked(t, race, lic, access, `200 #${i}: its access token`);
    t.equal((await race.validate(got.body.signToken)).status, 200, `200 #${i}: its sign token, issued before the change, redeems`);
  }
  const fresh = await getTokenPair(race, { licenseKey: lic.licenseKey, password: NEW_PASSWORD });
  t.equal(genOf(fresh.accessToken), 1, 'the new password gives gen 1');
  await expectWorks(t, race, lic, fresh.accessToken, 'the new access token');
  await race.drainWorker();
});
