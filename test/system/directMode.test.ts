import t from 'tap';
import { startHarness, type Harness } from '../helpers/harness.js';
import { SEVERAL_WORKERS } from '../helpers/processes.js';
import { rawExchange } from '../helpers/rawHttp.js';

// Clients straight at the service are for development: in production (NODE_ENV=production)
// a service that trusts no proxy (TRUST_PROXY=0) says once at start that it needs the front,
// and why; behind the front (TRUST_PROXY=1) it says nothing of it (outside production the
// warning's condition is false by construction: config.production).

const frontWarnings = (h: Harness): unknown[] => h.logs.filter((r) => r.level === 40 && /^no front \(TRUST_PROXY=0\)/.test(String(r.msg)));

t.test('TRUST_PROXY=0 under NODE_ENV=production: one warning that a front is required', async (t) => {
  const h = await startHarness(t, 'direct-prod', { NODE_ENV: 'production', TRUST_PROXY: '0', WORKERS: SEVERAL_WORKERS }, { logLevel: 'warn' });
  const [warning, ...more] = frontWarnings(h);
  t.match(warning, { msg: /deploy\/nginx.*pipelined.*two Content-Length.*spend a unit.*HTTP\/1\.0/ }, 'it says what a client straight at the service risks');
  t.same(more, [], 'once, however many processes serve');
  // what the warning is about: HTTP/1.0 straight to the service gets no answer
  const direct = await rawExchange(h.service.port, 'GET /healthz HTTP/1.0\r\n\r\n', { timeoutMs: 1500 });
  t.equal(direct.answers.length, 0, 'an HTTP/1.0 request straight to the service gets no answer');
});

t.test('behind the front: no such warning', async (t) => {
  const behind = await startHarness(t, 'direct-front', { NODE_ENV: 'production', TRUST_PROXY: '1', WORKERS: '1' }, { logLevel: 'warn' });
  t.same(frontWarnings(behind), [], 'TRUST_PROXY=1 in production');
});
