import { createServer } from 'node:net';
import {
  ArtefactVerificationError, KeySet, verifyLicenseToken, verifyReceipt, type ArtefactProblem,
} from '@license-service/client';
import t from 'tap';
import { licensePayload, receiptPayload, signerOf } from '../helpers/artefacts.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { freshFetch } from '../helpers/http.js';
import { rejection, sdkOf } from '../helpers/sdk.js';
import { newSigningKey, TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// The JWKS fetched from the service (GET /.well-known/jwks.json) and kept in a KeySet: one
// fetch for every artefact after; a kid not in the set fetched again at most once per
// refetchIntervalMs, which is how a key rotation reaches a verifier and how a stream of
// forged kids does not reach the service. The rotation is two real services: the one
// before (TEST_SIGNING_KEY signs) and the one after (a new key signs, the old one is still
// published), as a load balancer hands a client one or the other. The KeySet's clock is the
// test's, so the interval passes without waiting.

const NEW_KEY = newSigningKey();
const before = await startHarness(t, 'sdk-jwks', NO_RATE_LIMITS);
const after = await startHarness(t, 'sdk-jwks-rotated', { ...NO_RATE_LIMITS, SIGNING_KEYS: `${NEW_KEY},${TEST_SIGNING_KEY}` });

const old = signerOf(TEST_SIGNING_KEY).signer;
const rotated = signerOf(NEW_KEY, TEST_SIGNING_KEY).signer;
const forger = signerOf(newSigningKey()).signer;
const licenseOf = (signer: typeof old): string => signer.sign(JSON.stringify(licensePayload()));

/** A fetch to whichever service `base` names now, counting the JWKS requests. */
function routedFetch(base: string): { fetch: typeof fetch; jwksRequests: () => number; route: (to: string) => void } {
  let target = base;
  let requests = 0;
  return {
    jwksRequests: () => requests,
    route: (to) => {
      target = to;
    },
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname === '/.well-known/jwks.json') requests++;
      return freshFetch(target + url.pathname + url.search, init);
    },
  };
}

async function reasonOf(promise: Promise<unknown>): Promise<ArtefactProblem | string> {
  const err = await rejection(promise);
  if (err === undefined) return 'verified';
  return err instanceof ArtefactVerificationError ? err.reason : `another error: ${String(err)}`;
}

t.test('the JWKS of the service: fetched once, then every artefact verified offline', async (t) => {
  t.strictSame((await before.request('GET', '/.well-known/jwks.json')).body, JSON.parse(old.jwksBody), 'the service publishes the test key');
  const route = routedFetch(before.url);
  const keySet = new KeySet({ baseUrl: `${before.url}/`, fetch: route.fetch });
  const license = licensePayload();
  t.strictSame(await verifyLicenseToken(old.sign(JSON.stringify(license)), { keySet }), license, 'a license token');
  const receipt = receiptPayload();
  t.strictSame(await verifyReceipt(old.sign(JSON.stringify(receipt)), { keySet }), receipt, 'a receipt');
  const many = await Promise.all(Array.from({ length: 10 }, () => verifyLicenseToken(licenseOf(old), { keySet })));
  t.equal(many.length, 10);
  t.equal(route.jwksRequests(), 1, 'one fetch for all of them');

  const fresh = routedFetch(before.url);
  const concurrent = new KeySet({ baseUrl: before.url, fetch: fresh.fetch });
  await Promise.all(Array.from({ length: 5 }, () => verifyLicenseToken(licenseOf(old), { keySet: concurrent })));
  t.equal(fresh.jwksRequests(), 1, 'five at once before the set is known: one fetch, shared');

  const lic = await before.createLicense();
  const pair = await sdkOf(before).getToken({ ...lic, imzaTipi: 0 });
  t.equal(await reasonOf(verifyLicenseToken(pair.signToken, { keySet })), 'UNSUPPORTED_HEADER', 'the service\'s sign token (HS256) is no license token');
  t.equal(await reasonOf(verifyLicenseToken(pair.accessToken, { keySet })), 'UNSUPPORTED_HEADER', 'nor is its access token');
});

t.test('rotation: a kid signed after the set was fetched verifies once the set is fetched again, at most once per interval', async (t) => {
  let now = 1_800_000_000_000;
  const route = routedFetch(before.url);
  const keySet = new KeySet({ baseUrl: before.url, fetch: route.fetch, clock: () => now });
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(old), { keySet })), 'verified', 'before the rotation');
  route.route(after.url); // the service now signs with the new key

  t.equal(await reasonOf(verifyLicenseToken(licenseOf(rotated), { keySet })), 'UNKNOWN_KEY', 'the new kid, within the interval of the last fetch');
  t.equal(route.jwksRequests(), 1, 'not fetched again within the interval');
  now += 60_000;
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(rotated), { keySet })), 'verified', 'the interval passed: fetched again, the new kid found');
  t.equal(route.jwksRequests(), 2, 'fetched again once');
  t.equal(await reasonOf(verifyReceipt(old.sign(JSON.stringify(receiptPayload())), { keySet })), 'verified', 'the old key still published: its receipts verify');
  t.equal(route.jwksRequests(), 2);

  // a kid that never appears: one fetch per interval however many arrive
  const forged = (): Promise<string> => reasonOf(verifyLicenseToken(licenseOf(forger), { keySet }));
  t.strictSame(await Promise.all(Array.from({ length: 10 }, forged)), Array(10).fill('UNKNOWN_KEY'), 'ten forged kids');
  t.equal(route.jwksRequests(), 2, 'fetched just now: not again');
  now += 59_999;
  t.equal(await forged(), 'UNKNOWN_KEY');
  t.equal(route.jwksRequests(), 2, 'still within the interval');
  now += 1;
  t.strictSame(await Promise.all(Array.from({ length: 10 }, forged)), Array(10).fill('UNKNOWN_KEY'), 'ten more after the interval');
  t.equal(route.jwksRequests(), 3, 'one fetch for the ten');
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(rotated), { keySet })), 'verified', 'the known keys kept throughout');
  t.equal(route.jwksRequests(), 3);
});

t.test('JWKS_UNAVAILABLE: no answer, an error status; retried after the interval; keys fetched before are kept', async (t) => {
  const closed = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  const down = new KeySet({ baseUrl: `http://127.0.0.1:${closed}`, fetch: freshFetch });
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(old), { keySet: down })), 'JWKS_UNAVAILABLE', 'nothing listening');

  let now = 1_800_000_000_000;
  const route = routedFetch(`${before.url}/missing`);
  const keySet = new KeySet({ baseUrl: before.url, fetch: route.fetch, clock: () => now });
  const err = await rejection(verifyLicenseToken(licenseOf(old), { keySet }));
  t.equal((err as ArtefactVerificationError).reason, 'JWKS_UNAVAILABLE', 'a 404');
  t.match((err as Error).message, /HTTP 404/, 'says what came back');
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(old), { keySet })), 'JWKS_UNAVAILABLE', 'again within the interval');
  t.equal(route.jwksRequests(), 1, 'without a request: a failed fetch counts for the interval too');
  route.route(before.url);
  now += 60_000;
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(old), { keySet })), 'verified', 'the service back, the interval passed');
  route.route(`${before.url}/missing`);
  now += 60_000;
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(forger), { keySet })), 'JWKS_UNAVAILABLE', 'an unknown kid, the refetch failing');
  t.equal(await reasonOf(verifyLicenseToken(licenseOf(old), { keySet })), 'verified', 'the keys fetched before still verify');
  t.equal(route.jwksRequests(), 3);
});
