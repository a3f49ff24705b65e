import t from 'tap';
import { adminOk, createBody, expectInvalid } from '../helpers/admin.js';
import { auditRows } from '../helpers/audit.js';
import { startHarness, type Harness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import type { Asserts } from '../helpers/shapes.js';
import { mintTokens } from '../helpers/tokens.js';

// A license's own rate limits (docs/api.md#limits): the admin API sets them per license
// over the deployment's RATE_*_PER_MIN, and the scripts read them from the Redis copy on
// every request, so a PATCH is in force on the very next request of every process (the
// service runs as deployed: several processes). null is the deployment's default again, 0
// no limit for that license; the RateLimit-Policy shows the limit the license is held to.
// The deployment's defaults here: validate 100, check-quota 10, get-token 10, sign-token 100.

const LIMITS = { getToken: null, signToken: null, validate: null, checkQuota: null };

/** The answer's status and its RateLimit-Policy (null: none). */
const policyOf = (res: Answer): [number, string | null] => [res.status, res.headers.get('ratelimit-policy')];

/** The status, the policy and the r of the RateLimit field (null: none). */
function countedOf(res: Answer): [number, string | null, number | null] {
  const r = /;r=(\d+);/.exec(res.headers.get('ratelimit') ?? '');
  return [res.status, res.headers.get('ratelimit-policy'), r === null ? null : Number(r[1])];
}

async function patchLimits(h: Harness, lic: TestLicense, rateLimits: Record<string, number | null>): Promise<Record<string, unknown>> {
  return adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { rateLimits });
}

function expectLimits(t: Asserts, data: Record<string, unknown>, limits: Record<string, number | null>, what: string): void {
  t.same(data.rateLimits, { ...LIMITS, ...limits }, `${what}: the License's rateLimits`);
}

t.test('per-license limits', async (t) => {
  const h = await startHarness(t, 'licenselimits');

  t.test('validate: the license\'s own limit, raised, reset to the default and turned off, each on the next request', async (t) => {
    const small = await h.createLicense({ totalQuota: 20, rateLimits: { validate: 3 } });
    const other = await h.createLicense({ totalQuota: 20 });
    expectLimits(t, await adminOk(h, 'GET', `/admin/v1/licenses/${small.licenseKey}`), { validate: 3 }, 'read back');
    const { tokens } = await mintTokens(h, small, 6);
    const theirs = (await mintTokens(h, other, 4)).tokens;

    for (let i = 0; i < 3; i++) {
      t.same(countedOf(await h.validate(tokens[i])), [200, '"validate";q=3;w=60', 2 - i], `validate ${i + 1} of 3`);
    }
    const fourth = await h.validate(tokens[3]);
    t.same(countedOf(fourth), [429, '"validate";q=3;w=60', 0], 'the 4th in the minute: 429 by the license\'s own limit');
    for (const [i, token] of theirs.entries()) {
      t.same(countedOf(await h.validate(token)), [200, '"validate";q=100;w=60', 99 - i], `the other license (default), validate ${i + 1}`);
    }

    expectLimits(t, await patchLimits(h, small, { validate: 6 }), { validate: 6 }, 'raised to 6');
    t.same(countedOf(await h.validate(tokens[3])), [200, '"validate";q=6;w=60', 1], 'the very next request: within 6 (its 5th)');

    expectLimits(t, await patchLimits(h, small, { validate: null }), {}, 'reset');
    t.same(countedOf(await h.validate(tokens[4])), [200, '"validate";q=100;w=60', 94], 'null: the default 100 again');

    expectLimits(t, await patchLimits(h, small, { validate: 0 }), { validate: 0 }, 'turned off');
    t.same(countedOf(await h.validate(tokens[5])), [200, null, null], '0: no limit for this license, no RateLimit fields');
    t.equal((await adminOk(h, 'GET', `/admin/v1/licenses/${small.licenseKey}`)).usedQuota, 6, 'every accepted validate spent its unit');
  });

  t.test('a hospital above the default: 500 a minute', async (t) => {
    const hospital = await h.createLicense({ totalQuota: 200, rateLimits: { validate: 500 } });
    const { tokens } = await mintTokens(h, hospital, 101);
    const statuses = [];
    for (const token of tokens) statuses.push(policyOf(await h.validate(token)));
    t.same(statuses, Array(101).fill([200, '"validate";q=500;w=60']), '101 validations, past the default 100: every one served');
  });

  t.test('check-quota', async (t) => {
    const lic = await h.createLicense({ rateLimits: { checkQuota: 2 } });
    const other = await h.createLicense();
    t.same(countedOf(await h.checkQuota(lic.licenseKey)), [200, '"check-quota";q=2;w=60', 1]);
    t.same(countedOf(await h.checkQuota(lic.licenseKey)), [200, '"check-quota";q=2;w=60', 0]);
    t.same(countedOf(await h.checkQuota(lic.licenseKey)), [429, '"check-quota";q=2;w=60', 0], 'the 3rd: 429');
    t.same(countedOf(await h.checkQuota(other.licenseKey)), [200, '"check-quota";q=10;w=60', 9], 'another license: the default');
    await patchLimits(h, lic, { checkQuota: 5 });
    t.same(countedOf(await h.checkQuota(lic.licenseKey)), [200, '"check-quota";q=5;w=60', 1], 'raised: the next request is its 4th of 5');
    await patchLimits(h, lic, { checkQuota: 0 });
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push(policyOf(await h.checkQuota(lic.licenseKey)));
    t.same(statuses, Array(12).fill([200, null]), '0: no limit, no fields');
  });

  t.test('get-token and sign-token', async (t) => {
    const lic = await h.createLicense({ totalQuota: 50, rateLimits: { getToken: 2, signToken: 2 } });
    const first = await h.getToken(lic.licenseKey, lic.password);
    t.same(countedOf(first), [200, '"get-token";q=2;w=60', 1], 'get-token 1 of 2');
    t.same(countedOf(await h.getToken(lic.licenseKey, lic.password)), [200, '"get-token";q=2;w=60', 0], 'get-token 2 of 2');
    t.same(countedOf(await h.getToken(lic.licenseKey, lic.password)), [429, '"get-token";q=2;w=60', 0], 'get-token 3: 429');

    const access = first.body.accessToken as string;
    t.same(countedOf(await h.signToken(access)), [200, '"sign-token";q=2;w=60', 1], 'sign-token 1 of 2 (get-token\'s issuances do not count)');
    t.same(countedOf(await h.signToken(access)), [200, '"sign-token";q=2;w=60', 0], 'sign-token 2 of 2');
    t.same(countedOf(await h.signToken(access)), [429, '"sign-token";q=2;w=60', 0], 'sign-token 3: 429');

    expectLimits(t, await patchLimits(h, lic, { getToken: null }), { signToken: 2 }, 'get-token reset, sign-token kept');
    const again = await h.getToken(lic.licenseKey, lic.password);
    t.same(countedOf(again), [200, '"get-token";q=10;w=60', 7], 'get-token: the default, its 3rd token of the minute');
    t.same(countedOf(await h.signToken(access)), [429, '"sign-token";q=2;w=60', 0], 'sign-token: still its own 2');
    await patchLimits(h, lic, { signToken: 0 });
    t.same(countedOf(await h.signToken(access)), [200, null, null], 'sign-token 0: served, no fields');
  });

  t.test('bad values: 400 INVALID_REQUEST naming the limit', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    for (const [value, field] of [
      [{ validate: -1 }, 'rateLimits.validate'], [{ signToken: 1.5 }, 'rateLimits.signToken'], [{ getToken: '100' }, 'rateLimits.getToken'],
      [{ checkQuota: 1e9 + 1 }, 'rateLimits.checkQuota'], [{ history: 5 }, 'rateLimits.history'], ['100', 'rateLimits'],
    ] as const) {
      expectInvalid(t, await h.admin('PATCH', path, { rateLimits: value }), field);
      expectInvalid(t, await h.admin('POST', '/admin/v1/licenses', createBody({ rateLimits: value })), field);
    }
    expectLimits(t, await adminOk(h, 'GET', path), {}, 'nothing changed');
    expectLimits(t, await patchLimits(h, lic, { validate: 1e9, checkQuota: 0 }), { validate: 1e9, checkQuota: 0 }, 'the bounds are accepted');
  });

  t.test('the audit log records a change under rateLimits', async (t) => {
    const lic = await h.createLicense();
    await patchLimits(h, lic, { validate: 500 });
    await patchLimits(h, lic, { validate: null, checkQuota: 0 });
    const rows = await auditRows(h, lic.licenseKey);
    t.same(rows.map((r) => [r.action, r.before, r.after]), [
      ['create', null, rows[0]?.after],
      ['update', { rateLimits: LIMITS }, { rateLimits: { ...LIMITS, validate: 500 } }],
      ['update', { rateLimits: { ...LIMITS, validate: 500 } }, { rateLimits: { ...LIMITS, checkQuota: 0 } }],
    ], 'each change: the limits before and after');
    t.same(rows[0]?.after.rateLimits, LIMITS, 'the create: every limit the default');
  });
});
