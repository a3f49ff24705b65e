import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { createBody } from '../helpers/admin.js';
import { ADMIN_TOKEN, NO_RATE_LIMITS, startHarness, testEnv, type Harness, type Teardown } from '../helpers/harness.js';
import { exitOf, SERVER_SCRIPT, spawnLogged } from '../helpers/processes.js';
import { TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// Configuration (docs/operations.md#configuration): the defaults, a misconfigured
// deployment refusing to start with one clear line on stderr instead of failing later, and
// a service without ADMIN_TOKEN serving no admin API.

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

const SECRET = randomBytes(32).toString('hex');

// files that exist (their content does not matter to loadConfig)
const DIR = mkdtempSync(path.join(tmpdir(), 'lic-config-'));
t.teardown(() => rmSync(DIR, { recursive: true, force: true }));
const CERT = path.join(DIR, 'cert.pem');
const KEY = path.join(DIR, 'key.pem');
writeFileSync(CERT, 'not really a certificate');
writeFileSync(KEY, 'not really a key');

/** Nothing reachable: if a check were missing the process would fail later, with another message. */
const BASE_ENV: Record<string, string> = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unreachable',
  REDIS_URL: 'redis://127.0.0.1:1',
  PORT: '0',
  LOG_LEVEL: 'silent',
  SIGNING_KEYS: TEST_SIGNING_KEY,
};

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  stdout: string;
}

/** Runs the server process with `env` until it exits by itself (SIGKILLed after 15 s: then it did not refuse). */
async function runServer(t: Teardown, env: Record<string, string>): Promise<Exit> {
  const server = spawnLogged(t, SERVER_SCRIPT, env);
  let exit = await exitOf(server.child, 15_000);
  if (exit.timedOut) exit = await server.stop('SIGKILL', 5000); // the assertions fail: it did not exit
  else await server.stop(); // the rest of its output
  return { code: exit.code, signal: exit.signal, stderr: server.text('stderr'), stdout: server.text('stdout') };
}

function assertRefused(t: TestT, exit: Exit, mention: RegExp): void {
  t.equal(exit.signal, null, 'exited by itself (not killed after hanging)');
  t.ok(exit.code !== null && exit.code !== 0, `non-zero exit code (${exit.code})`);
  const lines = exit.stderr.trim().split('\n').filter((l) => l.trim() !== '');
  t.equal(lines.length, 1, `one line on stderr: ${JSON.stringify(exit.stderr)}`);
  t.match(lines[0] ?? '', mention, `the line names the problem: ${lines[0]}`);
}

t.test('the server process refuses a bad configuration with one line', async (t) => {
  t.test('JWT_SECRET missing', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, ALLOW_HTTP: '1' }), /JWT_SECRET/);
  });
  t.test('JWT_SECRET empty', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, ALLOW_HTTP: '1', JWT_SECRET: '' }), /JWT_SECRET/);
  });
  t.test('a signing key that is not an Ed25519 key', async (t) => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    assertRefused(t, await runServer(t, { ...BASE_ENV, ALLOW_HTTP: '1', JWT_SECRET: SECRET, SIGNING_KEYS: rsa }), /SIGNING_KEYS.*not Ed25519/);
  });
  t.test('a SIGNING_KEYS_FILE that cannot be read', async (t) => {
    const missing = path.join(DIR, 'no-such-keys.pem');
    assertRefused(t, await runServer(t, { ...BASE_ENV, ALLOW_HTTP: '1', JWT_SECRET: SECRET, SIGNING_KEYS: '', SIGNING_KEYS_FILE: missing }),
      /SIGNING_KEYS_FILE .*no-such-keys\.pem cannot be read/);
  });
  t.test('JWT_SECRET of 31 bytes', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, ALLOW_HTTP: '1', JWT_SECRET: 'x'.repeat(31) }), /JWT_SECRET/);
  });
  t.test('no TLS files and no ALLOW_HTTP', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET }), /TLS|HTTPS/);
  });
  t.test('ALLOW_HTTP=0 is not ALLOW_HTTP=1', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, ALLOW_HTTP: '0' }), /TLS|HTTPS/);
  });
  t.test('a certificate without its key', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, TLS_CERT_FILE: CERT }), /TLS/);
  });
  t.test('TLS files that do not exist', async (t) => {
    const missing = path.join(DIR, 'missing.pem');
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, TLS_CERT_FILE: missing, TLS_KEY_FILE: missing }), /TLS/);
  });
  t.test('PORT abc', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, ALLOW_HTTP: '1', PORT: 'abc' }), /PORT/);
  });
  t.test('PORT out of range', async (t) => {
    assertRefused(t, await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, ALLOW_HTTP: '1', PORT: '70000' }), /PORT/);
  });
  t.test('a rate limit that is not a number', async (t) => {
    const exit = await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, ALLOW_HTTP: '1', RATE_VALIDATE_PER_MIN: 'lots' });
    assertRefused(t, exit, /RATE_VALIDATE_PER_MIN/);
  });
  t.test('the secret never appears in the refusal', async (t) => {
    const exit = await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, PORT: 'abc', ALLOW_HTTP: '1' });
    t.notMatch(exit.stderr + exit.stdout, SECRET);
  });
});

t.test('loadConfig: defaults', async (t) => {
  const config = loadConfig({ JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1' });
  t.equal(config.port, 8080);
  t.equal(config.host, '127.0.0.1');
  t.equal(config.redisPrefix, 'lic');
  t.equal(config.redisUrl, 'redis://127.0.0.1:6379');
  t.same(config.redisClusterNodes, []);
  t.equal(config.redisSentinel, null, 'no Sentinel');
  t.same(config.redisWait, { replicas: 0, timeoutMs: 250 }, 'no replica waited for');
  t.equal(config.databaseUrl, 'postgres://127.0.0.1:5432/licensing');
  t.equal(config.pgSchema, 'public');
  t.equal(config.jwtKeys[0]!.secret, SECRET);
  t.same(config.adminTokens, [], 'no admin API without ADMIN_TOKEN or ADMIN_TOKENS');
  t.equal(config.tls, null);
  t.equal(config.rate.getToken, 10);
  t.equal(config.rate.validate, 100);
  t.equal(config.rate.checkQuota, 10);
  t.equal(config.rate.history, 60, 'history: 60 pages a minute per license');
  t.equal(config.quotaCacheSeconds, 30);
  t.equal(config.redisCommandTimeoutMs, 1000, 'a Redis call may take a second before the request answers 503');
});

t.test('loadConfig: overrides', async (t) => {
  const config = loadConfig({
    JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, TLS_CERT_FILE: CERT, TLS_KEY_FILE: KEY, PORT: '0', HOST: '0.0.0.0',
    REDIS_PREFIX: 'other', PG_SCHEMA: 'tenant_a', ADMIN_TOKEN: 'a-long-enough-admin-token',
    RATE_GET_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '500', RATE_CHECK_QUOTA_PER_MIN: '0', RATE_HISTORY_PER_MIN: '0', QUOTA_CACHE_SECONDS: '0',
    REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7001', REDIS_COMMAND_TIMEOUT_MS: '250',
  });
  t.equal(config.redisCommandTimeoutMs, 250);
  t.same(config.tls, { certFile: CERT, keyFile: KEY }, 'TLS files need no ALLOW_HTTP');
  t.equal(config.port, 0, 'PORT 0 picks a free port');
  t.equal(config.host, '0.0.0.0');
  t.equal(config.redisPrefix, 'other');
  t.equal(config.pgSchema, 'tenant_a');
  t.same(config.adminTokens, [{ name: 'admin', token: 'a-long-enough-admin-token' }], 'ADMIN_TOKEN alone: the admin named "admin"');
  t.equal(config.rate.getToken, 0, '0 disables');
  t.equal(config.rate.validate, 500);
  t.equal(config.rate.checkQuota, 0);
  t.equal(config.rate.history, 0);
  t.equal(config.quotaCacheSeconds, 0);
  t.same(config.redisClusterNodes, [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7001 }]);
  const sentinel = loadConfig({
    JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1', REDIS_SENTINELS: '10.0.0.1:26379, [::1]:26380',
    REDIS_SENTINEL_MASTER: 'lisans', REDIS_SENTINEL_PASSWORD: 'sentinel-secret', REDIS_PASSWORD: 'node-secret', REDIS_WAIT_REPLICAS: '1',
  });
  t.same(sentinel.redisSentinel, { sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '::1', port: 26380 }], masterName: 'lisans', password: 'sentinel-secret' },
    'REDIS_SENTINELS, an IPv6 one in brackets, the master\'s name and the sentinels\' password');
  t.same(sentinel.redisAuth, { password: 'node-secret' }, 'REDIS_PASSWORD: the servers\'');
  t.same(sentinel.redisWait, { replicas: 1, timeoutMs: 250 }, 'REDIS_WAIT_REPLICAS, REDIS_WAIT_TIMEOUT_MS at its default');
  t.equal(loadConfig({ JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1', ADMIN_TOKEN: '' }).adminTokens.length, 0, 'empty ADMIN_TOKEN: no admin API');
});

t.test('every RATE_* at 0 (the tests\' NO_RATE_LIMITS) turns every limit off', async (t) => {
  const config = loadConfig(testEnv('ratesoff', NO_RATE_LIMITS));
  t.same(Object.entries(config.rate).filter(([, perMinute]) => perMinute !== 0), [], 'no rate limit left on');
});

t.test('loadConfig: JWT_SECRET is measured in bytes', async (t) => {
  const twoByte = 'şığüöçŞİĞÜÖÇâîûê';
  t.equal(loadConfig({ SIGNING_KEYS: TEST_SIGNING_KEY, JWT_SECRET: twoByte, ALLOW_HTTP: '1' }).jwtKeys[0]!.secret, twoByte, '16 two-byte characters = 32 bytes');
  t.throws(() => loadConfig({ SIGNING_KEYS: TEST_SIGNING_KEY, JWT_SECRET: `${'ş'.repeat(15)}a`, ALLOW_HTTP: '1' }), /JWT_SECRET/, '31 bytes refused');
  t.equal(loadConfig({ SIGNING_KEYS: TEST_SIGNING_KEY, JWT_SECRET: 'abcdefghijklmnopqrstuvwxyz012345', ALLOW_HTTP: '1' }).jwtKeys[0]!.secret.length, 32, '32 ASCII bytes accepted');
});

t.test('loadConfig: RUN_WORKER, LOG_LEVEL and REDIS_URL as they may be written', async (t) => {
  const ok = { JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1' };
  t.same([undefined, '', '1', '0'].map((v) => loadConfig(v === undefined ? ok : { ...ok, RUN_WORKER: v }).runWorker), [true, true, true, false],
    'RUN_WORKER unset or empty: on; 1 on; 0 off');
  t.equal(loadConfig({ ...ok, LOG_LEVEL: 'warn' }).logLevel, 'warn');
  t.equal(loadConfig(ok).logLevel, 'info', 'LOG_LEVEL unset: info');
  for (const url of ['redis://127.0.0.1:6379', 'rediss://cache.example:6380/2', 'redis://:pw-that-is-long-enough-0123@10.0.0.5', '/run/redis/redis.sock']) {
    t.equal(loadConfig({ ...ok, REDIS_URL: url }).redisUrl, url, url);
  }
});

t.test('loadConfig: refusals name the variable', async (t) => {
  const ok = { JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1' };
  const cases: [Record<string, string>, RegExp][] = [
    [{ ALLOW_HTTP: '1' }, /JWT_SECRET/],
    [{ JWT_SECRET: SECRET }, /TLS|HTTPS/],
    [{ JWT_SECRET: SECRET, TLS_KEY_FILE: KEY }, /TLS/],
    [{ JWT_SECRET: SECRET, TLS_CERT_FILE: path.join(DIR, 'missing.pem'), TLS_KEY_FILE: KEY }, /TLS_CERT_FILE/],
    [{ ...ok, PORT: 'abc' }, /PORT/],
    [{ ...ok, PORT: '-1' }, /PORT/],
    [{ ...ok, PORT: '65536' }, /PORT/],
    [{ ...ok, PORT: '80.5' }, /PORT/],
    [{ ...ok, RATE_GET_TOKEN_PER_MIN: 'ten' }, /RATE_GET_TOKEN_PER_MIN/],
    [{ ...ok, RATE_VALIDATE_PER_MIN: '-1' }, /RATE_VALIDATE_PER_MIN/],
    [{ ...ok, RATE_CHECK_QUOTA_PER_MIN: '1e3' }, /RATE_CHECK_QUOTA_PER_MIN/],
    [{ ...ok, RATE_HISTORY_PER_MIN: '1.5' }, /RATE_HISTORY_PER_MIN/],
    [{ ...ok, RATE_HISTORY_PER_MIN: '2000000000' }, /RATE_HISTORY_PER_MIN/],
    [{ ...ok, QUOTA_CACHE_SECONDS: 'half' }, /QUOTA_CACHE_SECONDS/],
    [{ ...ok, DATABASE_URL: 'mysql://127.0.0.1/x' }, /DATABASE_URL/],
    [{ ...ok, REDIS_CLUSTER_NODES: 'nohostport' }, /REDIS_CLUSTER_NODES/],
    [{ ...ok, REDIS_COMMAND_TIMEOUT_MS: '0' }, /REDIS_COMMAND_TIMEOUT_MS/],
    [{ ...ok, REDIS_COMMAND_TIMEOUT_MS: 'soon' }, /REDIS_COMMAND_TIMEOUT_MS/],
    [{ ...ok, REDIS_CLUSTER_NODES: '10.0.0.1:70000' }, /REDIS_CLUSTER_NODES/],
    [{ ...ok, REDIS_SENTINELS: '10.0.0.1:26379' }, /^REDIS_SENTINEL_MASTER must name the master/],
    [{ ...ok, REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_MASTER: 'a b' }, /REDIS_SENTINEL_MASTER/],
    [{ ...ok, REDIS_SENTINELS: 'sentinel-without-port', REDIS_SENTINEL_MASTER: 'mymaster' }, /REDIS_SENTINELS/],
    [{ ...ok, REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: '10.0.0.2:7000' }, /choose Sentinel or Cluster/],
    [{ ...ok, REDIS_SENTINEL_MASTER: 'mymaster' }, /REDIS_SENTINEL_MASTER is set but REDIS_SENTINELS is not/],
    [{ ...ok, REDIS_PASSWORD: 'node-secret\n' }, /^REDIS_PASSWORD must be at most 4096 bytes without control characters/],
    [{ ...ok, REDIS_USERNAME: 'svc\0' }, /^REDIS_USERNAME must be/],
    [{ ...ok, REDIS_PASSWORD: 'p'.repeat(4097) }, /^REDIS_PASSWORD must be at most 4096 bytes/],
    [{ ...ok, REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_SENTINEL_PASSWORD: 'sentinel\tsecret' }, /^REDIS_SENTINEL_PASSWORD must be/],
    [{ ...ok, LOG_LEVEL: 'bogus' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "bogus"$/],
    [{ ...ok, RUN_WORKER: 'false' }, /^RUN_WORKER must be 1 \(run the usage worker here\) or 0 \(serve only\), got "false"$/],
    [{ ...ok, RUN_WORKER: 'no' }, /^RUN_WORKER must be 1/],
    [{ ...ok, REDIS_URL: 'garbage' }, /^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ ...ok, REDIS_URL: 'rediss//127.0.0.1:6379' }, /^REDIS_URL must be/],
    [{ ...ok, REDIS_URL: 'http://127.0.0.1:6379' }, /^REDIS_URL must be/],
    [{ ...ok, REDIS_WAIT_REPLICAS: '17' }, /REDIS_WAIT_REPLICAS/],
    [{ ...ok, REDIS_WAIT_REPLICAS: 'one' }, /REDIS_WAIT_REPLICAS/],
    [{ ...ok, REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '1000' }, /REDIS_WAIT_TIMEOUT_MS \(1000\) must be below REDIS_COMMAND_TIMEOUT_MS \(1000\)/],
  ];
  for (const [env, name] of cases) {
    t.throws(() => loadConfig(env), name, `${JSON.stringify(env).replace(SECRET, '<secret>')} -> ${name}`);
  }
});

t.test('a Redis password refused at start is not repeated in the message', async (t) => {
  const env = testEnv('redispw', { REDIS_PASSWORD: 'hunter2-hunter2\r\n' });
  const err = (() => {
    try {
      loadConfig(env);
      return null;
    } catch (e) {
      return e as Error;
    }
  })();
  t.match(err?.message, /^REDIS_PASSWORD must be/, 'refused, naming the setting');
  t.notMatch(err?.message, /hunter2/, 'without the password');
});

t.test('loadConfig accepts an empty ADMIN_TOKEN as "no admin API"', async (t) => {
  const config = loadConfig(testEnv('noadmincfg', { ADMIN_TOKEN: '' }));
  t.same(config.adminTokens, []);
  const unset = testEnv('noadmincfg2');
  delete unset.ADMIN_TOKEN;
  t.same(loadConfig(unset).adminTokens, []);
  t.same(loadConfig(testEnv('noadmincfg3', { ADMIN_TOKEN: '', ADMIN_TOKENS: '' })).adminTokens, [], 'both empty: none');
});

t.test('ADMIN_TOKENS: named admins, each with its own token', async (t) => {
  const env = (tokens: string) => testEnv('admintokens', { ADMIN_TOKEN: '', ADMIN_TOKENS: tokens });
  t.same(loadConfig(env('alice:alice-token-0123456789, ops.bot_2-x:ops-token-0123456789/+=')).adminTokens, [
    { name: 'alice', token: 'alice-token-0123456789' }, { name: 'ops.bot_2-x', token: 'ops-token-0123456789/+=' },
  ], 'in order, spaces around an entry ignored');
  const refused: [string, RegExp, string][] = [
    ['alice-token-0123456789', /^ADMIN_TOKENS must be name:token,\.\.\. with names of 1-32 lower-case/, 'no name'],
    [':alice-token-0123456789', /^ADMIN_TOKENS must be name:token/, 'an empty name'],
    ['Alice:alice-token-0123456789', /^ADMIN_TOKENS must be name:token/, 'an upper-case name'],
    [`${'a'.repeat(33)}:alice-token-0123456789`, /^ADMIN_TOKENS must be name:token/, 'a name of 33 characters'],
    ['al ice:alice-token-0123456789', /^ADMIN_TOKENS must be name:token/, 'a space in a name'],
    ['alice:short', /^ADMIN_TOKENS: the token of "alice" must be 16 to 4096 printable ASCII/, 'a token of 5 characters'],
    ['alice:', /^ADMIN_TOKENS: the token of "alice" must be/, 'no token'],
    ['alice:has a space in it 0123', /^ADMIN_TOKENS: the token of "alice" must be/, 'a space in a token'],
    ['alice:tökenwithnonascii0123', /^ADMIN_TOKENS: the token of "alice" must be/, 'a token not ASCII'],
    ['alice:alice-token-0123456789,', /^ADMIN_TOKENS must be name:token/, 'a trailing comma'],
    ['alice:alice-token-0123456789,alice:other-token-0123456789', /^ADMIN_TOKENS names the admin "alice" twice$/, 'a name twice'],
    ['alice:same-token-0123456789,bob:same-token-0123456789', /^ADMIN_TOKENS: "bob" and "alice" have the same token/, 'a token twice'],
  ];
  for (const [tokens, message, what] of refused) {
    t.throws(() => loadConfig(env(tokens)), { name: 'Error', message }, what);
    try {
      loadConfig(env(tokens));
    } catch (err) {
      t.notOk((err as Error).message.includes('0123456789'), `${what}: the refusal never shows a token`);
      t.notOk((err as Error).message.includes('\n'), `${what}: one line`);
    }
  }
  t.throws(() => loadConfig(testEnv('admintokens2', { ADMIN_TOKEN: 'a-long-enough-admin-token', ADMIN_TOKENS: 'alice:alice-token-0123456789' })),
    /^set ADMIN_TOKENS or ADMIN_TOKEN, not both/, 'both set: refused, as JWT_SECRETS and JWT_SECRET');
  t.throws(() => loadConfig(testEnv('admintokens3', { ADMIN_TOKEN: 'short' })), /^ADMIN_TOKEN must be 16 to 4096 printable ASCII characters without spaces$/);
  // a request sends visible ASCII only: such a token could never be used
  t.throws(() => loadConfig(testEnv('admintokens3', { ADMIN_TOKEN: 'our admin passphrase 2026 q7zX' })), /^ADMIN_TOKEN must be 16 to 4096/, 'spaces');
  t.throws(() => loadConfig(testEnv('admintokens3', { ADMIN_TOKEN: 'şifreğüöçıİşifreğüöçıİ' })), /^ADMIN_TOKEN must be 16 to 4096/, 'non-ASCII');
});

t.test('the server process refuses bad ADMIN_TOKENS with one line', async (t) => {
  const exit = await runServer(t, { ...BASE_ENV, JWT_SECRET: SECRET, ALLOW_HTTP: '1', ADMIN_TOKENS: 'alice:short' });
  assertRefused(t, exit, /ADMIN_TOKENS: the token of "alice"/);
});

t.test('without ADMIN_TOKEN the admin routes answer 404', async (t) => {
  const h: Harness = await startHarness(t, 'noadmin', { ADMIN_TOKEN: '' });
  const key = randomUUID();
  const routes: [string, string, unknown][] = [
    ['POST', '/admin/v1/licenses', createBody()],
    ['GET', `/admin/v1/licenses/${key}`, undefined],
    ['PATCH', `/admin/v1/licenses/${key}`, { isActive: false }],
    ['POST', `/admin/v1/licenses/${key}/quota`, { add: 5 }],
  ];
  for (const [method, path, body] of routes) {
    for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${ADMIN_TOKEN}` }, { authorization: 'Bearer ' }]) {
      const res = await h.request(method, path, body, headers);
      t.equal(res.status, 404, `${method} ${path}`);
      t.equal(res.body?.success, false, 'a JSON 404');
    }
  }
  const [count] = await h.sql`select count(*)::int as n from licenses`;
  t.equal(count?.n, 0, 'nothing created');
  t.equal((await h.checkQuota(key)).status, 404, 'the public API still serves');
});
