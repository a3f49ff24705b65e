import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { expectRateLimited } from '../helpers/shapes.js';
import { getTokenPair } from '../helpers/tokens.js';

// POST /api/v1/auth/sign-token against abuse: RATE_SIGN_TOKEN_PER_MIN per license (a stolen
// access token mints no more than the limit). Forged, tampered and expired access tokens:
// signToken.error.test.ts (401 INVALID_TOKEN).

t.test('rate limit: the 4th request in a minute is refused, per license', async (t) => {
  const h = await startHarness(t, 'signtoken-ratelimit', { RATE_SIGN_TOKEN_PER_MIN: '3' });
  const lic = await h.createLicense();
  const other = await h.createLicense();
  const { accessToken: access } = await getTokenPair(h, lic);
  const { accessToken: otherAccess } = await getTokenPair(h, other);
  for (let i = 0; i < 3; i++) t.equal((await h.signToken(access, 0)).status, 200);
  expectRateLimited(t, await h.signToken(access, 1));
  t.equal((await h.signToken(otherAccess, 0)).status, 200, 'another license is not limited');
});
