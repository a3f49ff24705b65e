import { createHash } from 'node:crypto';
import t, { type Test } from 'tap';
import { allScriptSources } from '../../src/redis/scripts.js';
import { startStack, type Stack } from '../helpers/faults/stack.js';
import { pollUntil } from '../helpers/wait.js';

// GET /readyz: 200 only when this instance can serve (Redis and Postgres answer, Redis holds
// every script), else 503 naming what is down; scripts Redis dropped are loaded again; a hung
// Redis is reported, not waited for. The test breaks only its own Redis and Postgres proxy.

const READY = { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' };
const SHAS = allScriptSources().map((lua) => createHash('sha1').update(lua).digest('hex'));

async function readiness(stack: Stack): Promise<unknown[]> {
  const o = await stack.request('GET', '/readyz');
  return o.kind === 'answer' ? [o.status, o.body] : [o.kind];
}

async function becomesReady(t: Test, stack: Stack, what: string): Promise<void> {
  const last = await pollUntil(() => readiness(stack), (r) => r[0] === 200, { timeoutMs: 15_000, intervalMs: 100 });
  t.same(last, [200, READY], `${what}: ready again`);
}

t.test('/readyz follows Redis, Postgres and the scripts', { timeout: 120_000 }, async (t) => {
  const stack = await startStack(t, { label: 'readyz', proxyPostgres: true });
  const proxy = stack.proxy;
  if (!proxy) throw new Error('no proxy');
  t.same(await readiness(stack), [200, READY], 'everything up: 200');

  await stack.redis.cli('SCRIPT', 'FLUSH');
  t.same((await stack.redis.cli('SCRIPT', 'EXISTS', ...SHAS)).split('\n').map(Number), SHAS.map(() => 0), 'scripts flushed');
  t.same(await readiness(stack), [200, READY], 'after SCRIPT FLUSH: still ready');
  t.same((await stack.redis.cli('SCRIPT', 'EXISTS', ...SHAS)).split('\n').map(Number), SHAS.map(() => 1), 'every script loaded again');

  proxy.cut();
  t.same(await readiness(stack), [503, { success: false, redis: 'ok', postgres: 'down', scripts: 'ok' }], 'Postgres cut: 503');
  proxy.restore();
  await becomesReady(t, stack, 'Postgres back');

  await stack.redis.signal('SIGSTOP');
  const asked = Date.now();
  const hung = await readiness(stack);
  const tookMs = Date.now() - asked;
  await stack.redis.signal('SIGCONT');
  t.same(hung, [503, { success: false, redis: 'down', postgres: 'ok', scripts: 'down' }], 'Redis hung: 503');
  t.ok(tookMs < 5_000, `answered without waiting for the hung Redis (${tookMs} ms)`);
  await becomesReady(t, stack, 'Redis resumed');

  await stack.redis.signal('SIGKILL');
  const dead = await readiness(stack);
  t.same(dead, [503, { success: false, redis: 'down', postgres: 'ok', scripts: 'down' }], 'Redis killed: 503');
  await stack.redis.restart();
  await becomesReady(t, stack, 'Redis restarted (its scripts loaded again)');
});
