import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import postgres from 'postgres';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { judgeRedisConfig, type MasterSettings } from '../../src/redis/configCheck.js';
import { DATABASE_URL, testEnv } from '../helpers/harness.js';
import { call } from '../helpers/http.js';
import { TEST_SIGNING_KEY } from '../helpers/signingKeys.js';
import {
  exitOf, SERVER_SCRIPT, serverProcessesOf, spawnLogged, spawnServer, startPrivateRedis, startRedisCluster, WORKER_SCRIPT,
  type LoggedProcess,
} from '../helpers/processes.js';

// Redis's configuration read at start (docs/operations.md#redis-configuration-check): an evicting
// maxmemory-policy refuses the start with one line, appendonly no in production is a
// warning, a Redis that will not answer CONFIG is a warning (a refusal when strict), and
// REDIS_CONFIG_CHECK overrides. The server (as `npm start` runs it: a primary and a server
// process per core, each checking at its start) and the standalone worker run as child
// processes against private redis-servers and a private Cluster; the shared Redis is not touched.

const run = promisify(execFile);

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

// the reasons, spelled out here so that a changed wording fails
const ALLKEYS = 'under memory pressure it may evict any key of the service, a bucket\'s restart epoch (a token redeemed twice) ' +
  'or a queued usage event (a spent unit forgotten) among them; set maxmemory-policy noeviction, or REDIS_CONFIG_CHECK=warn to start anyway';
const VOLATILE = 'under memory pressure it may evict the keys that expire, which are the token markers (unused tokens refused as used), ' +
  'the Idempotency-Key records (a retry refused instead of answered again) and the rate-limit and failed-login counters (limits lifted); ' +
  'set maxmemory-policy noeviction, or REDIS_CONFIG_CHECK=warn to start anyway';
const NO_AOF = 'appendonly no: a restart loses the usage events not yet in Postgres (the usage worker\'s lag: docs/durability.md) ' +
  'with the quota they spent, and every outstanding token is refused; set appendonly yes with appendfsync everysec or always';
const UNCHECKED = 'not checked; maxmemory-policy must be noeviction on every master, else a token may be redeemed twice';
const RENAMED = 'ERR unknown command \'config\', with args beginning with: \'GET\' \'maxmemory-policy\'';

t.test('judgeRedisConfig: the verdict on what the masters answered', async (t) => {
  const at = (node: string, policy: string, appendonly = 'yes'): MasterSettings => ({ node, settings: { 'maxmemory-policy': policy, appendonly } });
  const cases: [string, MasterSettings[], Parameters<typeof judgeRedisConfig>[1], boolean, ReturnType<typeof judgeRedisConfig>][] = [
    ['noeviction, AOF: nothing to say', [at('r:1', 'noeviction')], 'refuse', true, { refusal: null, warnings: [] }],
    ['allkeys-lru refused', [at('r:1', 'allkeys-lru')], 'refuse', false, { refusal: `Redis r:1 has maxmemory-policy allkeys-lru: ${ALLKEYS}`, warnings: [] }],
    ['volatile-ttl refused', [at('r:1', 'volatile-ttl')], 'strict', false, { refusal: `Redis r:1 has maxmemory-policy volatile-ttl: ${VOLATILE}`, warnings: [] }],
    ['a policy this code does not know counts as allkeys', [at('r:1', 'some-new-policy')], 'refuse', false,
      { refusal: `Redis r:1 has maxmemory-policy some-new-policy: ${ALLKEYS}`, warnings: [] }],
    ['two masters: both named, the worse harm', [at('r:1', 'volatile-lru'), at('r:2', 'noeviction'), at('r:3', 'allkeys-lfu')], 'refuse', false,
      { refusal: `Redis r:1 (volatile-lru), r:3 (allkeys-lfu) have a maxmemory-policy other than noeviction: ${ALLKEYS}`, warnings: [] }],
    ['warn: the refusal becomes a warning', [at('r:1', 'allkeys-lru')], 'warn', false,
      { refusal: null, warnings: [`Redis r:1 has maxmemory-policy allkeys-lru: ${ALLKEYS.replace(', or REDIS_CONFIG_CHECK=warn to start anyway', '; starting anyway (REDIS_CONFIG_CHECK=warn)')}`] }],
    ['off: nothing at all', [at('r:1', 'allkeys-lru', 'no'), { node: 'r:2', unreadable: 'x' }], 'off', true, { refusal: null, warnings: [] }],
    ['appendonly no in production: a warning', [at('r:1', 'noeviction', 'no'), at('r:2', 'noeviction', 'no')], 'refuse', true,
      { refusal: null, warnings: [`Redis r:1, r:2 have ${NO_AOF}`] }],
    ['appendonly no in development: nothing', [at('r:1', 'noeviction', 'no')], 'refuse', false, { refusal: null, warnings: [] }],
    ['unreadable: one warning naming every such master', [{ node: 'r:1', unreadable: 'NOPERM' }, { node: 'r:2', unreadable: 'NOPERM' }], 'refuse', false,
      { refusal: null, warnings: [`could not read the configuration of Redis r:1 (NOPERM), r:2 (NOPERM): ${UNCHECKED}`] }],
    ['no policy in the answer counts as unreadable', [{ node: 'r:1', settings: { appendonly: 'yes' } }], 'refuse', false,
      { refusal: null, warnings: [`could not read the configuration of Redis r:1 (no maxmemory-policy in its answer): ${UNCHECKED}`] }],
    ['unreadable, strict: refused', [{ node: 'r:1', unreadable: 'NOPERM' }], 'strict', false, {
      refusal: 'could not read the configuration of Redis r:1 (NOPERM): REDIS_CONFIG_CHECK=strict needs CONFIG GET; allow it, or set REDIS_CONFIG_CHECK=refuse to start with a warning',
      warnings: [],
    }],
  ];
  for (const [name, masters, mode, production, expected] of cases) t.same(judgeRedisConfig(masters, mode, production), expected, name);
});

t.test('REDIS_CONFIG_CHECK and NODE_ENV in the configuration', async (t) => {
  const base = { JWT_SECRET: randomBytes(32).toString('hex'), SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1' };
  t.equal(loadConfig(base).redisConfigCheck, 'refuse', 'refuse by default');
  t.equal(loadConfig(base).production, false, 'development without NODE_ENV');
  t.equal(loadConfig({ ...base, NODE_ENV: 'production' }).production, true);
  t.equal(loadConfig({ ...base, NODE_ENV: 'staging' }).production, false, 'only NODE_ENV=production is production');
  for (const mode of ['refuse', 'strict', 'warn', 'off']) t.equal(loadConfig({ ...base, REDIS_CONFIG_CHECK: mode }).redisConfigCheck, mode);
  for (const bad of ['OFF', 'no', 'warn ', '0']) {
    t.throws(() => loadConfig({ ...base, REDIS_CONFIG_CHECK: bad }),
      { message: `REDIS_CONFIG_CHECK must be one of refuse, strict, warn, off, got "${bad}"` }, JSON.stringify(bad));
  }
});

// ---- the processes --------------------------------------------------------------------------

const sql = postgres(DATABASE_URL, { onnotice: () => {}, max: 1 });
const schemas: string[] = [];
t.teardown(async () => {
  for (const schema of schemas) await sql.unsafe(`drop schema if exists "${schema}" cascade`);
  await sql.end({ timeout: 2 });
});

/** The environment of a process on this Redis (its schema dropped at the end). */
function envOf(label: string, redis: Record<string, string>, more: Record<string, string> = {}): Record<string, string> {
  const env = testEnv(label, { ...redis, LOG_LEVEL: 'info', ...more });
  schemas.push(env.PG_SCHEMA as string);
  return env;
}

/** Runs the program until it exits by itself; asserts exit code 1 and exactly `line` on stderr. */
async function assertRefused(t: TestT, script: string, env: Record<string, string>, line: string): Promise<void> {
  const child = spawnLogged(t, script, env);
  const exit = await exitOf(child.child, 20_000);
  await child.stop('SIGKILL', 5000); // the rest of its output (and a kill if it did not exit)
  t.same([exit.code, exit.timedOut], [1, false], 'exit code 1');
  t.equal(child.text('stderr'), line, 'exactly the one line on stderr');
}

/** The warnings of a running process whose text is about Redis's configuration. */
function configWarnings(p: LoggedProcess): string[] {
  return p.records().filter((r) => Number(r.level) === 40 && 'redisConfigCheck' in r).map((r) => String(r.msg));
}

/** A warning as a server logs it: once by each of its processes (every one checks Redis at its start). */
const perProcess = (warning: string): string[] => Array<string>(serverProcessesOf(testEnv('rcfg'))).fill(warning);

async function assertServes(t: TestT, url: string): Promise<void> {
  const health = await call(url, 'GET', '/healthz');
  t.equal(health.kind === 'answer' ? health.status : health.kind, 200, '/healthz answers 200');
}

t.test('an evicting policy refuses the start with one line, before any key is written', async (t) => {
  for (const policy of ['allkeys-lru', 'volatile-lru']) {
    // maxmemory 0 (no limit, the default) does not make it safe: a limit may be set later
    const redis = await startPrivateRedis(t, ['--maxmemory-policy', policy]);
    const env = envOf('rcfg-evict', { REDIS_URL: redis.url });
    const reason = `Redis 127.0.0.1:${redis.port} has maxmemory-policy ${policy}: ${policy.startsWith('allkeys') ? ALLKEYS : VOLATILE}`;
    await assertRefused(t, SERVER_SCRIPT, env, `license-service: cannot start: ${reason}`);
    await assertRefused(t, WORKER_SCRIPT, env, `license-worker: cannot start: ${reason}`);
    t.equal(await redis.cli('dbsize'), '0', `${policy}: no key written`);
  }
});

t.test('noeviction starts and serves; appendonly no warns in production only', async (t) => {
  const bare = await startPrivateRedis(t, ['--maxmemory-policy', 'noeviction']);
  const dev = await spawnServer(t, envOf('rcfg-dev', { REDIS_URL: bare.url }));
  await assertServes(t, dev.url);
  t.same(configWarnings(dev), [], 'development: no warning');

  const prod = await spawnServer(t, envOf('rcfg-prod', { REDIS_URL: bare.url }, { NODE_ENV: 'production' }));
  await assertServes(t, prod.url);
  t.same(configWarnings(prod), perProcess(`Redis 127.0.0.1:${bare.port} has ${NO_AOF}`), 'production: the warning, once per server process');

  const aof = await startPrivateRedis(t, ['--appendonly', 'yes']);
  const durable = await spawnServer(t, envOf('rcfg-aof', { REDIS_URL: aof.url }, { NODE_ENV: 'production' }));
  await assertServes(t, durable.url);
  t.same(configWarnings(durable), [], 'production with appendonly yes: no warning');

  const worker = spawnLogged(t, WORKER_SCRIPT, envOf('rcfg-wprod', { REDIS_URL: bare.url }, { NODE_ENV: 'production' }));
  await worker.lineMatching((l) => l.text.includes('usage worker running'), 20_000, 'the worker running');
  t.same(configWarnings(worker), [`Redis 127.0.0.1:${bare.port} has ${NO_AOF}`], 'the standalone worker warns too');
});

t.test('REDIS_CONFIG_CHECK=warn starts with a warning, off without one', async (t) => {
  const redis = await startPrivateRedis(t, ['--maxmemory-policy', 'allkeys-lru']);
  const warned = await spawnServer(t, envOf('rcfg-warn', { REDIS_URL: redis.url }, { REDIS_CONFIG_CHECK: 'warn' }));
  await assertServes(t, warned.url);
  const harm = ALLKEYS.replace(', or REDIS_CONFIG_CHECK=warn to start anyway', '; starting anyway (REDIS_CONFIG_CHECK=warn)');
  t.same(configWarnings(warned), perProcess(`Redis 127.0.0.1:${redis.port} has maxmemory-policy allkeys-lru: ${harm}`));
  const off = await spawnServer(t, envOf('rcfg-off', { REDIS_URL: redis.url }, { REDIS_CONFIG_CHECK: 'off', NODE_ENV: 'production' }));
  await assertServes(t, off.url);
  t.same(configWarnings(off), [], 'off: not even the appendonly warning');
});

t.test('a Redis that refuses CONFIG: a warning and the start, or a refusal when strict', async (t) => {
  const redis = await startPrivateRedis(t, ['--rename-command', 'CONFIG', '']);
  const env = envOf('rcfg-renamed', { REDIS_URL: redis.url });
  const server = await spawnServer(t, env);
  await assertServes(t, server.url);
  t.same(configWarnings(server), perProcess(`could not read the configuration of Redis 127.0.0.1:${redis.port} (${RENAMED}): ${UNCHECKED}`));

  const strict = `could not read the configuration of Redis 127.0.0.1:${redis.port} (${RENAMED}): ` +
    'REDIS_CONFIG_CHECK=strict needs CONFIG GET; allow it, or set REDIS_CONFIG_CHECK=refuse to start with a warning';
  await assertRefused(t, SERVER_SCRIPT, envOf('rcfg-strict', { REDIS_URL: redis.url }, { REDIS_CONFIG_CHECK: 'strict' }),
    `license-service: cannot start: ${strict}`);
});

t.test('Redis Cluster: every master is read; one evicting master refuses, named', async (t) => {
  const cluster = await startRedisCluster(t);
  const bad = cluster.ports[1] as number;
  const cli = async (port: number, ...args: string[]): Promise<string> => (await run('redis-cli', ['-p', String(port), ...args])).stdout.trim();
  t.equal(await cli(bad, 'config', 'set', 'maxmemory-policy', 'allkeys-lfu'), 'OK');
  await assertRefused(t, SERVER_SCRIPT, envOf('rcfg-cluster', { REDIS_CLUSTER_NODES: cluster.nodes }),
    `license-service: cannot start: Redis 127.0.0.1:${bad} has maxmemory-policy allkeys-lfu: ${ALLKEYS}`);
  t.same(await Promise.all(cluster.ports.map((p) => cli(p, 'dbsize'))), cluster.ports.map(() => '0'), 'no key written on any master');
  t.equal(await cli(bad, 'config', 'set', 'maxmemory-policy', 'noeviction'), 'OK');
  const server = await spawnServer(t, envOf('rcfg-cluster-ok', { REDIS_CLUSTER_NODES: cluster.nodes }, { NODE_ENV: 'production' }));
  await assertServes(t, server.url);
  const [warning, ...more] = configWarnings(server);
  t.same(more, perProcess(warning ?? '').slice(1), 'one warning, once per server process');
  const named = /^Redis (.*) have (.*)$/.exec(warning ?? '');
  t.same(named?.[1]?.split(', ').sort(), cluster.ports.map((p) => `127.0.0.1:${p}`).sort(), 'every master read and named');
  t.equal(named?.[2], NO_AOF);
});
