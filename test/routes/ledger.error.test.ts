import { randomBytes } from 'node:crypto';
import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { bearer, craftAccessToken, nowSeconds } from '../helpers/jwt.js';
import { expectCodedError } from '../helpers/shapes.js';
import { getTokenPair } from '../helpers/tokens.js';

// GET /api/License/ledger/{licenseKey} refusals, in history's published shapes: 401
// INVALID_TOKEN without a valid access token, 400 INVALID_LICENSE_KEY for a key that is no
// UUID, 400 INVALID_REQUEST naming limit or cursor.

const cursorOf = (...parts: string[]) => Buffer.from(parts.join('|'), 'utf8').toString('base64url');

t.test('ledger errors', async (t) => {
  const h = await startHarness(t, 'ledgererr', NO_RATE_LIMITS);
  const lic = await h.createLicense();
  const pair = await getTokenPair(h, lic);
  const path = `/api/License/ledger/${lic.licenseKey}`;

  t.test('401 INVALID_TOKEN: no, garbled, expired, foreign-signed access token, a sign token', async (t) => {
    const now = nowSeconds();
    const expired = craftAccessToken(lic.firmaId, h.config.jwtKeys[0]!.secret, { iat: now - 1000, exp: now - 100 });
    const foreign = craftAccessToken(lic.firmaId, randomBytes(32).toString('hex'));
    const cases: [string, Record<string, string>][] = [
      ['none', {}], ['garbled', bearer('garbage')], ['not Bearer', { authorization: `Basic ${pair.accessToken}` }], ['expired', bearer(expired)],
      ['signed with another secret', bearer(foreign)], ['a sign token', bearer(pair.signToken)],
    ];
    for (const [what, headers] of cases) {
      const res = await h.request('GET', path, undefined, headers);
      expectCodedError(t, res, 401, 'INVALID_TOKEN', what);
      t.equal(res.body.error.message, 'Geçersiz veya süresi dolmuş erişim tokenı', `${what}: history's message`);
    }
    t.equal((await h.ledger(lic.licenseKey, pair.accessToken)).status, 200, 'the same request with the real access token: 200');
  });

  t.test('400 INVALID_LICENSE_KEY for a key that is no UUID', async (t) => {
    for (const key of ['not-a-uuid', '12345', `${lic.licenseKey}x`]) {
      expectCodedError(t, await h.ledger(key, pair.accessToken), 400, 'INVALID_LICENSE_KEY', key);
    }
  });

  t.test('400 INVALID_REQUEST naming limit: not 1..500', async (t) => {
    for (const bad of ['0', '501', 'abc', '-1', '2.5', '']) {
      const res = await h.ledger(lic.licenseKey, pair.accessToken, `?limit=${bad}`);
      expectCodedError(t, res, 400, 'INVALID_REQUEST', `limit=${bad}`);
      t.equal(res.body.error.message, 'Geçersiz istek parametresi: limit');
    }
  });

  t.test('400 INVALID_REQUEST naming cursor: any cursor this server did not hand out', async (t) => {
    const entry = `e${'1'.padStart(19, '0')}`;
    const bad = [
      'A'.repeat(10), 'not a cursor', '!!', cursorOf('1700000000000000', 's2026-11-25'), // a day's spending: the admin's view only
      cursorOf('x', entry), cursorOf('1700000000000000', 'e1'), cursorOf('1700000000000000', entry, 'more'),
      cursorOf('2026-03-01T09:11:40.052Z', '019abc2f-0e7b-7d15-8a93-6c2e4b1f9d07'), // history's
      `${cursorOf('1700000000000000', entry)}A`,
    ];
    for (const cursor of bad) {
      const res = await h.ledger(lic.licenseKey, pair.accessToken, `?cursor=${encodeURIComponent(cursor)}`);
      expectCodedError(t, res, 400, 'INVALID_REQUEST', `cursor=${cursor}`);
      t.equal(res.body.error.message, 'Geçersiz istek parametresi: cursor');
    }
    const ok = await h.ledger(lic.licenseKey, pair.accessToken, `?cursor=${cursorOf('1700000000000000', entry)}`);
    t.equal(ok.status, 200, 'a cursor of the form handed out is a place in the order');
    t.same(ok.body.data.items, [], 'and nothing is older than 2023');
  });
});
