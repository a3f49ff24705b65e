import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { bearer, craftAccessToken, nowSeconds } from '../helpers/jwt.js';
import { expectCodedError } from '../helpers/shapes.js';
import { redeemMany } from '../helpers/tokens.js';

// GET /api/License/history/{licenseKey} is for the access token of that license only: 401
// INVALID_TOKEN for anything else that is not a valid access token, 403 for another
// license's, and nothing of the history leaks.

t.test('history security', async (t) => {
  const h = await startHarness(t, 'historysec', { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' });

  t.test('401 INVALID_TOKEN without a valid access token', async (t) => {
    const lic = await h.createLicense();
    const got = await h.getToken(lic.licenseKey, lic.password, 0);
    const path = `/api/License/history/${lic.licenseKey}`;
    expectCodedError(t, await h.request('GET', path), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.request('GET', path, undefined, bearer('garbage')), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.request('GET', path, undefined, { authorization: `Basic ${got.body.accessToken}` }), 401, 'INVALID_TOKEN');
    const now = nowSeconds();
    const expired = craftAccessToken(lic.firmaId, h.config.jwtKeys[0]!.secret, { iat: now - 1000, exp: now - 100 });
    expectCodedError(t, await h.history(lic.licenseKey, expired), 401, 'INVALID_TOKEN');
    const foreign = craftAccessToken(lic.firmaId, randomBytes(32).toString('hex'));
    expectCodedError(t, await h.history(lic.licenseKey, foreign), 401, 'INVALID_TOKEN');
    expectCodedError(t, await h.history(lic.licenseKey, got.body.signToken), 401, 'INVALID_TOKEN');
    // the same request with the real access token is fine
    t.equal((await h.history(lic.licenseKey, got.body.accessToken)).status, 200);
  });


  t.test('403 with another license\'s access token', async (t) => {
    const mine = await h.createLicense();
    const theirs = await h.createLicense();
    const myAccess = (await h.getToken(mine.licenseKey, mine.password, 0)).body.accessToken as string;
    await redeemMany(h, myAccess, 1);
    const theirAccess = (await h.getToken(theirs.licenseKey, theirs.password, 0)).body.accessToken as string;
    await h.drainWorker();
    const res = await h.history(mine.licenseKey, theirAccess);
    t.equal(res.status, 403);
    t.equal(res.body?.success, false);
    t.type(res.body?.error?.code, 'string');
    t.notOk(res.text.includes('tokenId'), 'no items leak');
  });

});
