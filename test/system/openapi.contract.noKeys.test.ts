import t from 'tap';
import { startContract } from '../helpers/contract.js';
import { documentNamed } from '../helpers/receipts.js';
import { getTokenPair } from '../helpers/tokens.js';

// The answers of a service without signing keys (SIGNING_KEYS unset, as `npm start` runs it
// otherwise with default settings) against its /openapi.json: the 503 of license validation
// in the coded shape and of sign in validate's, neither with Retry-After, the empty JWKS,
// /readyz and /healthz naming the missing keys, and validate serving as ever. What these
// answers mean: signingKeys.none.test.ts.

const k = await startContract(t, 'oa-nokeys', { SIGNING_KEYS: '' });
const NO_RETRY = { retryAfter: false };

t.test('the answers that depend on the keys, each checked against the document', async (t) => {
  const lic = await k.license();
  const { signToken } = await getTokenPair(k.c, lic);
  await k.expect(t, 503, 'license validation', (c) => c.request('POST', '/api/License/validate', { licenseKey: lic.licenseKey, password: lic.password }), NO_RETRY);
  await k.expect(t, 503, 'sign', (c) => c.request('POST', '/api/Signature/sign', { token: signToken, documents: [documentNamed('belge.pdf')] }), NO_RETRY);
  await k.expect(t, 200, 'validate: the same token', k.c.request('POST', '/api/license/validate', { token: signToken }));
  await k.expect(t, 200, 'the empty JWKS', k.c.request('GET', '/.well-known/jwks.json'));
  await k.expect(t, 200, '/readyz', k.c.request('GET', '/readyz'));
  await k.expect(t, 200, '/healthz', k.c.request('GET', '/healthz'));
});

t.test('every answer matched the document', async (t) => {
  const SEEN = ['post /api/license/validate 200', 'post /api/license/validate 503', 'post /api/signature/sign 503', 'get /.well-known/jwks.json 200',
    'get /readyz 200', 'get /healthz 200'];
  k.finish(t, (op) => op.split(' ').length === 2 || SEEN.includes(op));
});
