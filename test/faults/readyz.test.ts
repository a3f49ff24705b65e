import t, { type Test } from 'tap';
import { holdsLibrary } from '../../src/redis/library.js';
import { makeProbe, probeRound } from '../helpers/faults/probe.js';
import { startStack, type FaultLicense, type Stack } from '../helpers/faults/stack.js';
import { pollUntil, until } from '../helpers/wait.js';

// GET /readyz: 200 only when this instance can serve (Redis and Postgres answer, Redis holds
// the scripts' function library), else 503 naming what is down; a library Redis dropped is
// loaded again, by /readyz and by the first call that misses it; a hung
// Redis is reported, not waited for. The test breaks only its own Redis and Postgres proxy.
// An answer may be up to a second old (the instance checks at most once a second), so each
// change is polled for.

const READY = { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' };

async function readiness(stack: Stack): Promise<unknown[]> {
  const o = await stack.request('GET', '/readyz');
  return o.kind === 'answer' ? [o.status, o.body] : [o.kind];
}

async function becomesReady(t: Test, stack: Stack, what: string): Promise<void> {
  const last = await pollUntil(() => readiness(stack), (r) => r[0] === 200, { timeoutMs: 15_000, intervalMs: 100 });
  t.same(last, [200, READY], `${what}: ready again`);
}

/** /readyz until it answers 503; the last answer seen. */
function becomesUnready(stack: Stack): Promise<unknown[]> {
  return pollUntil(() => readiness(stack), (r) => r[0] !== 200, { timeoutMs: 15_000, intervalMs: 100 });
}

t.test('/readyz follows Redis, Postgres and the scripts', { timeout: 120_000 }, async (t) => {
  const stack = await startStack(t, { label: 'readyz', proxyPostgres: true });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  t.same(await readiness(stack), [200, READY], 'everything up: 200');

  await stack.redis.cli('FUNCTION', 'FLUSH');
  t.equal(await holdsLibrary(stack.redisClient), false, 'library flushed');
  // ready all along, and the library is back once /readyz has checked again
  const answers: unknown[][] = [];
  const reloaded = await until(async () => {
    answers.push(await readiness(stack));
    return holdsLibrary(stack.redisClient);
  }, { timeoutMs: 15_000, intervalMs: 100 });
  t.ok(reloaded, 'the library loaded again by /readyz');
  t.same(answers.filter((a) => a[0] !== 200 || JSON.stringify(a[1]) !== JSON.stringify(READY)), [], `after FUNCTION FLUSH: still ready (${answers.length} answers)`);

  // a request that finds no library loads it itself: no /readyz in between
  const [lic] = await stack.createLicenses(1, { totalQuota: 10 });
  const probe = await makeProbe(stack, lic as FaultLicense);
  await stack.redis.cli('FUNCTION', 'FLUSH');
  const round = await probeRound(stack, probe);
  t.same(Object.values(round).map(({ outcome: o }) => (o.kind === 'answer' ? o.status : o.kind)), [200, 200, 200, 200], 'after FUNCTION FLUSH: validate, get-token, sign-token and check-quota answer 200');
  t.equal(await holdsLibrary(stack.redisClient), true, 'the library loaded again by the first call');

  proxy.cut();
  t.same(await becomesUnready(stack), [503, { success: false, redis: 'ok', postgres: 'down', scripts: 'ok' }], 'Postgres cut: 503');
  proxy.restore();
  await becomesReady(t, stack, 'Postgres back');

  // a request gets no answer after 5 s (stack.request): a 503 at all is a check that gave up on the hung Redis
  await stack.redis.signal('SIGSTOP');
  const hung = await becomesUnready(stack);
  await stack.redis.signal('SIGCONT');
  t.same(hung, [503, { success: false, redis: 'down', postgres: 'ok', scripts: 'down' }], 'Redis hung: 503, answered without waiting for it');
  await becomesReady(t, stack, 'Redis resumed');

  await stack.redis.signal('SIGKILL');
  const dead = await becomesUnready(stack);
  t.same(dead, [503, { success: false, redis: 'down', postgres: 'ok', scripts: 'down' }], 'Redis killed: 503');
  await stack.redis.restart();
  await becomesReady(t, stack, 'Redis restarted (its scripts loaded again)');
});
