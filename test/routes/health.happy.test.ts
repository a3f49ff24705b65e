import t from 'tap';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { expectCodedError } from '../helpers/shapes.js';

// GET /healthz: what an operator's probe reads. Its 503 (Redis or Postgres down) is in
// test/faults (postgres.down, redis.stopped).

t.test('GET /healthz: both stores up, the usage lag and the dead letters', async (t) => {
  const h = await startHarness(t, 'health', NO_RATE_LIMITS);
  const res = await h.request('GET', '/healthz');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type') ?? '', /^application\/json/);
  t.same(Object.keys(res.body).sort(), ['deadLetters', 'postgres', 'redis', 'success', 'usageLag', 'usageLagMs']);
  t.match(res.body, { success: true, redis: 'ok', postgres: 'ok', usageLag: 0, deadLetters: 0 });

  // a redemption is lag until the worker has written it
  const lic = await h.createLicense({ totalQuota: 1 });
  const got = await h.getToken(lic.licenseKey, lic.password, 0);
  t.equal((await h.validate(got.body.signToken)).status, 200);
  await h.drainWorker();
  t.equal((await h.request('GET', '/healthz')).body.usageLag, 0, 'no lag once the worker has written it');

  const post = await h.request('POST', '/healthz', {});
  expectCodedError(t, post, 405, 'METHOD_NOT_ALLOWED');
  t.equal(post.headers.get('allow'), 'GET');
});
