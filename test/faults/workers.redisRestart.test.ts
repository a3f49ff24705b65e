import t from 'tap';
import { freeLoopbackPort } from '../helpers/processes.js';
import { createLicense } from '../helpers/harness.js';
import { clientOf } from '../helpers/http.js';
import { startStack } from '../helpers/faults/stack.js';
import { oneRequestPerConnection } from '../helpers/sockets.js';
import { TokenSource } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';

// WORKERS=3 and a Redis restart (appendfsync everysec: it may have lost its last second):
// the three processes meet the new server together and each recovers it (src/redis/restarts.ts),
// but each bucket's epoch rises by exactly one (lua/stamp.lua raises it only for the first
// caller). A second rise would refuse, as used, the tokens issued in between by the process
// that recovered first.

const record = (text: string): Record<string, unknown> | null => {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
};

t.test('WORKERS=3, Redis restarted: one process recovers, the epochs rise once', { timeout: 90_000 }, async (t) => {
  const stack = await startStack(t, { label: 'workers-restart', redisArgs: ['--appendonly', 'yes', '--appendfsync', 'everysec'], servers: 0 });
  const port = await freeLoopbackPort();
  const server = await stack.startServer(0, { WORKERS: '3', PORT: String(port) });
  const allUp = record((await server.lineMatching((l) => record(l.text)?.msg === 'listening: all children', 30_000, 'every child listening')).text);
  const pids = allUp?.pids as number[];
  const client = clientOf(server.url);
  const lic = await createLicense(client, { totalQuota: 100 });
  const before = await new TokenSource(client, lic).many(3);
  const epochs = async () => Promise.all(stack.keys.epochs.map(async (k) => Number(await stack.redisClient.get(k) ?? 0)));
  const epochsBefore = await epochs();

  await stack.redis.signal('SIGTERM'); // an orderly stop: the AOF holds every write, yet the run id changes
  await stack.redis.restart();
  const runId = /run_id:(\w+)/.exec(await stack.redis.cli('info', 'server'))?.[1];

  await waitFor('every process ready again', async () => {
    const ready = await oneRequestPerConnection(port, pids, Array(30).fill({ method: 'GET', path: '/readyz' }));
    return new Set(ready.map((a) => a.pid)).size === 3 && ready.every((a) => a.status === 200);
  }, 20_000, 200);
  // a validate on connections that reach every process: each waits for its own check first
  const fresh = await new TokenSource(client, lic).many(30);
  const answers = await oneRequestPerConnection(port, pids, fresh.map((token) => ({ method: 'POST', path: '/api/license/validate', body: { token } })));
  t.equal(new Set(answers.map((a) => a.pid)).size, 3, 'the validates reached all three processes');
  t.same(answers.map((a) => a.status), Array(30).fill(200), 'every token issued after the restart redeems, whichever process issued or redeems it');
  // (the first start stamped the new Redis too: those records name the first run id)
  const recoveries = server.records().filter((r) => String(r.msg).startsWith('Redis server changed') && r.runId === runId);
  t.ok(recoveries.length >= 1, 'the new server recovered, named by its run id');
  t.equal(recoveries.reduce((sum, r) => sum + Number(r.raised), 0), stack.keys.epochs.length, 'the processes raised each bucket once between them');
  t.same(await epochs(), epochsBefore.map((e) => e + 1), 'every epoch raised by exactly one');
  t.same(await Promise.all(stack.keys.stamps.map((k) => stack.redisClient.get(k))), stack.keys.stamps.map(() => runId), 'every bucket stamped with the new server');
  const old = await oneRequestPerConnection(port, pids, before.map((token) => ({ method: 'POST', path: '/api/license/validate', body: { token } })));
  t.same(old.map((a) => a.status), [400, 400, 400], 'tokens issued before the restart are refused (fail closed)');
});
