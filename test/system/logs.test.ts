import { randomBytes, randomUUID } from 'node:crypto';
import postgres from 'postgres';
import t from 'tap';
import { DATABASE_URL, uniqueName } from '../helpers/harness.js';
import { call as httpCall, clientOf, type Answer } from '../helpers/http.js';
import { bearer, claimsOf, craftJwt, HS256_HEADER, ISSUER } from '../helpers/jwt.js';
import { spawnServer, startPrivateRedis, type LogLine, type ServerProcess } from '../helpers/processes.js';
import { startPostgresProxy } from '../helpers/proxy.js';
import { newSigningKey } from '../helpers/signingKeys.js';
import { TokenSource } from '../helpers/tokens.js';
import { sleep } from '../helpers/wait.js';

// Secrets never reach the logs (log.ts): no password, password hash, token, Authorization
// value, admin token or JWT secret appears in any line the server process writes, on any
// path. Failures are the dangerous paths: an ioredis error carries the command's arguments
// (sync.lua's include the argon2 hash of a new password) and a postgres error its query's
// parameters. So the real server process runs at LOG_LEVEL=trace against a private Redis
// that is made to refuse writes (out of memory, no replicas, an ACL on the credentials keys)
// and a Postgres behind a proxy that is cut; every endpoint is called with distinctive
// secrets on the happy path and on each failure, and then every stdout and stderr line is
// searched.

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

interface Secret {
  label: string;
  value: string;
}

const hex = (n: number) => randomBytes(n).toString('hex');

/** An HS256 JWT signed with `secret` (the service's own, for expired tokens the service must refuse). */
const forge = (secret: string, claims: Record<string, unknown>): string => craftJwt(HS256_HEADER, { iss: ISSUER, gen: 0, ...claims }, secret);

function levelOf(line: LogLine): number {
  try {
    const parsed: unknown = JSON.parse(line.text);
    const level = (parsed as { level?: unknown } | null)?.level;
    return typeof level === 'number' ? level : 0;
  } catch {
    // a line that is not pino's (a crash, a warning of node itself) counts as an error
    return line.stream === 'stderr' ? 50 : 0;
  }
}

t.test('no secret in any log line, on the happy path and with Redis and Postgres failing', async (t: TestT) => {
  const secrets: Secret[] = [];
  const secret = (label: string, value: string): string => {
    secrets.push({ label, value });
    return value;
  };

  // teardowns run last-in, first-out: the server stops first, the private Redis last
  const redis = await startPrivateRedis(t);
  const direct = postgres(DATABASE_URL, { onnotice: () => {}, max: 2 });
  const schema = uniqueName('logsec');
  t.teardown(async () => {
    await direct.unsafe(`drop schema if exists "${schema}" cascade`);
    await direct.end({ timeout: 2 });
  });
  const { proxy, url: viaProxy } = await startPostgresProxy(t);

  const jwtSecret = secret('JWT_SECRET', hex(32));
  const adminToken = secret('ADMIN_TOKEN', `adm-${hex(24)}`);
  const prefix = uniqueName('logsec');
  const server: ServerProcess = await spawnServer(t, {
    ALLOW_HTTP: '1',
    HOST: '127.0.0.1',
    PORT: '0',
    JWT_SECRET: jwtSecret,
    SIGNING_KEYS: secret('SIGNING_KEYS', newSigningKey()),
    ADMIN_TOKEN: adminToken,
    REDIS_URL: redis.url,
    REDIS_PREFIX: prefix,
    DATABASE_URL: viaProxy,
    PG_SCHEMA: schema,
    LOG_LEVEL: 'trace',
  });

  const answers: string[] = [];
  /** One request, its status kept under the label; status 0 when no answer came. */
  async function call(label: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const o = await httpCall(server.url, method, path, body, headers, 15_000);
    const answer: Answer = o.kind === 'answer' ? o : { status: 0, headers: new Headers(), body: null, text: o.kind === 'timeout' ? 'timeout' : o.error };
    answers.push(`${label}: ${answer.status}`);
    return answer;
  }
  const admin = (label: string, method: string, path: string, body?: unknown) => call(label, method, path, body, bearer(adminToken));
  const license = (password: string) => ({
    organizationName: 'Log Güvenliği A.Ş.',
    password,
    totalQuota: 100,
    expiryDate: new Date(Date.now() + 365 * 86400_000).toISOString(),
  });

  // 1. the happy paths, and the ordinary refusals
  const pwFirst = secret('password (create)', `pw-${hex(12)}`);
  const created = await admin('create', 'POST', '/admin/v1/licenses', license(pwFirst));
  t.equal(created.status, 201, `admin create: ${created.text}`);
  const licenseKey: string = created.body?.data?.licenseKey ?? randomUUID();
  const pwMain = secret('password (patched)', `pw-${hex(12)}`);
  const patched = await admin('patch', 'PATCH', `/admin/v1/licenses/${licenseKey}`, { password: pwMain });
  t.equal(patched.status, 200, `admin patch password: ${patched.text}`);
  const pwOther = secret('password (second license)', `pw-${hex(12)}`);
  const other = await admin('create other', 'POST', '/admin/v1/licenses', license(pwOther));
  t.equal(other.status, 201, `admin create the license patched on the failure paths: ${other.text}`);
  const otherKey: string = other.body?.data?.licenseKey ?? randomUUID();

  const pair = await call('get-token', 'POST', '/api/v1/auth/get-token', { licenseKey, password: pwMain, imzaTipi: 0 });
  t.equal(pair.status, 200, `get-token: ${pair.text}`);
  const accessToken = secret('access token', String(pair.body?.accessToken ?? 'missing-access-token'));
  const signToken = secret('sign token (get-token)', String(pair.body?.signToken ?? 'missing-sign-token'));
  const more = await call('sign-token', 'POST', '/api/v1/auth/sign-token', { imzaTipi: 1 }, bearer(accessToken));
  t.equal(more.status, 200, `sign-token: ${more.text}`);
  const minted = await new TokenSource(clientOf(server.url), { licenseKey, password: pwMain }, accessToken).many(4).catch(() => []);
  const spare = minted.map((token, i) => secret(`sign token (spare ${i})`, token));
  t.equal(spare.length, 4, 'four more sign tokens for the failure paths');
  if (more.status === 200) secret('sign token (sign-token)', String(more.body.signToken));
  const valid = await call('validate', 'POST', '/api/license/validate', { token: signToken });
  t.equal(valid.status, 200, `validate: ${valid.text}`);
  const again = await call('validate again', 'POST', '/api/license/validate', { token: signToken });
  t.equal(again.status, 400, 'validate of a used token: 400');
  await sleep(300); // history is read from Postgres, which the usage worker fills
  const history = await call('history', 'GET', `/api/License/history/${licenseKey}`, undefined, bearer(accessToken));
  t.equal(history.status, 200, `history: ${history.text}`);
  const quota = await call('check-quota', 'GET', `/api/License/check-quota/${licenseKey}`);
  t.equal(quota.status, 200, `check-quota: ${quota.text}`);
  const shown = await admin('admin get', 'GET', `/admin/v1/licenses/${licenseKey}`);
  t.equal(shown.status, 200, `admin get: ${shown.text}`);

  const wrongAdmin = secret('wrong admin token', `adm-wrong-${hex(16)}`);
  const refusedAdmin = await call('wrong admin token', 'GET', `/admin/v1/licenses/${licenseKey}`, undefined, bearer(wrongAdmin));
  t.equal(refusedAdmin.status, 401, 'a wrong admin token: 401');
  const pwWrong = secret('wrong password', `pw-wrong-${hex(12)}`);
  const refusedPw = await call('wrong password', 'POST', '/api/v1/auth/get-token', { licenseKey, password: pwWrong, imzaTipi: 0 });
  t.equal(refusedPw.status, 401, 'a wrong password: 401');
  const pwTaken = secret('password (create with a taken key)', `pw-taken-${hex(12)}`);
  const taken = await admin('create taken key', 'POST', '/admin/v1/licenses', { ...license(pwTaken), licenseKey });
  t.equal(taken.status, 409, 'admin create with a taken key: 409 (Postgres refused the insert)');
  const firmaId = String(claimsOf(accessToken).firma_id ?? '');
  const now = Math.floor(Date.now() / 1000);
  const expiredAccess = secret('expired access token', forge(jwtSecret, { firma_id: firmaId, iat: now - 2000, exp: now - 1000, typ: 'access' }));
  const expiredSign = secret('expired sign token', forge(jwtSecret, {
    firma_id: firmaId, firma_adi: 'Log Güvenliği A.Ş.', token_id: hex(8), imza_tipi: 0, iat: now - 2000, exp: now - 1000, typ: 'sign',
  }));
  const garbage = secret('garbage bearer', `garbage-${hex(16)}`);
  const forgedAccess = secret('access token signed with another key', forge(hex(32), { firma_id: firmaId, iat: now, exp: now + 600, typ: 'access' }));
  for (const [label, token] of [['expired', expiredAccess], ['garbage', garbage], ['forged', forgedAccess]] as const) {
    const res = await call(`sign-token ${label}`, 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, bearer(token));
    t.equal(res.status, 401, `sign-token with a ${label} Bearer: 401`);
    const hist = await call(`history ${label}`, 'GET', `/api/License/history/${licenseKey}`, undefined, bearer(token));
    t.equal(hist.status, 401, `history with a ${label} Bearer: 401`);
  }
  const expiredAnswer = await call('validate expired', 'POST', '/api/license/validate', { token: expiredSign });
  t.equal(expiredAnswer.status, 401, 'validate of an expired sign token: 401');
  const garbageAnswer = await call('validate garbage', 'POST', '/api/license/validate', { token: garbage });
  t.ok(garbageAnswer.status >= 400 && garbageAnswer.status < 500, `validate of garbage: 4xx (${garbageAnswer.status})`);

  /** The calls made on every failure path; returns the status of the admin create. */
  async function failingRound(round: string, token: string | undefined): Promise<number> {
    const pwNew = secret(`password (create, ${round})`, `pw-${round}-${hex(12)}`);
    const create = await admin(`${round} create`, 'POST', '/admin/v1/licenses', license(pwNew));
    const pwPatch = secret(`password (patch, ${round})`, `pw-${round}-${hex(12)}`);
    await admin(`${round} patch`, 'PATCH', `/admin/v1/licenses/${otherKey}`, { password: pwPatch });
    await admin(`${round} admin get`, 'GET', `/admin/v1/licenses/${licenseKey}`);
    await admin(`${round} add quota`, 'POST', `/admin/v1/licenses/${licenseKey}/quota`, { add: 5 });
    const got = await call(`${round} get-token`, 'POST', '/api/v1/auth/get-token', { licenseKey, password: pwMain, imzaTipi: 0 });
    if (got.status === 200) {
      secret(`access token (${round})`, String(got.body.accessToken));
      secret(`sign token (${round})`, String(got.body.signToken));
    }
    const pwBad = secret(`wrong password (${round})`, `pw-wrong-${round}-${hex(12)}`);
    await call(`${round} get-token wrong password`, 'POST', '/api/v1/auth/get-token', { licenseKey, password: pwBad, imzaTipi: 0 });
    const pwUnknown = secret(`password of an unknown key (${round})`, `pw-unknown-${round}-${hex(12)}`);
    await call(`${round} get-token unknown key`, 'POST', '/api/v1/auth/get-token', { licenseKey: randomUUID(), password: pwUnknown, imzaTipi: 0 });
    const signed = await call(`${round} sign-token`, 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, bearer(accessToken));
    if (signed.status === 200) secret(`sign token (${round} sign-token)`, String(signed.body.signToken));
    if (token !== undefined) await call(`${round} validate`, 'POST', '/api/license/validate', { token });
    await call(`${round} history`, 'GET', `/api/License/history/${licenseKey}`, undefined, bearer(accessToken));
    await call(`${round} check-quota`, 'GET', `/api/License/check-quota/${otherKey}`);
    return create.status;
  }

  /** Runs a round and returns the lines it logged (with a moment for the pipes to deliver them). */
  async function windowOf(run: () => Promise<void>): Promise<LogLine[]> {
    const from = server.lines.length;
    await run();
    await sleep(300);
    return server.lines.slice(from);
  }

  // 2. Redis refuses writes: out of memory
  const oomLines = await windowOf(async () => {
    await redis.cli('config', 'set', 'maxmemory-policy', 'noeviction');
    await redis.cli('config', 'set', 'maxmemory', '1');
    const status = await failingRound('oom', spare[0]);
    t.ok(status >= 500, `admin create with Redis out of memory fails (${status})`);
    await redis.cli('config', 'set', 'maxmemory', '0');
  });

  // 3. Redis refuses writes: not enough replicas
  const noReplicaLines = await windowOf(async () => {
    await redis.cli('config', 'set', 'min-replicas-to-write', '1');
    const status = await failingRound('norepl', spare[1]);
    t.ok(status >= 500, `admin create with Redis refusing writes (NOREPLICAS) fails (${status})`);
    await redis.cli('config', 'set', 'min-replicas-to-write', '0');
  });

  // 4. Redis refuses writes to the credentials keys only (an ACL): the license hash's sync
  // succeeds, so the failing call is the one whose arguments hold the password hash (when
  // every write fails, the first rejection to surface is usually the license hash's sync)
  const aclLines = await windowOf(async () => {
    // every key readable; writable unless it ends in "}:c" (keys.ts: credentials)
    await redis.cli('acl', 'setuser', 'default', 'resetkeys', '%R~*', '%RW~*[^c]', '%RW~*[^:]c', '%RW~*[^}]:c');
    const status = await failingRound('acl', spare[2]);
    t.ok(status >= 500, `admin create with the credentials key refused (NOPERM) fails (${status})`);
    await redis.cli('acl', 'setuser', 'default', 'resetkeys', '~*');
  });

  // 5. Postgres unreachable (Redis writable again)
  const pgLines = await windowOf(async () => {
    proxy.cut();
    const status = await failingRound('pgcut', spare[3]);
    t.ok(status >= 500, `admin create with Postgres cut fails (${status})`);
    proxy.restore();
  });
  t.comment(`answers: ${answers.join(', ')}`);

  // 6. a graceful stop
  const exit = await server.stop('SIGTERM', 25_000);
  t.notOk(exit.timedOut, 'the server exited after SIGTERM');
  t.equal(exit.code, 0, 'exit code 0');

  // the real hashes, as Postgres holds them (a hash overwritten later is still caught by the pattern)
  const rows = await direct.unsafe<{ license_key: string; password_hash: string }[]>(
    `select license_key::text as license_key, password_hash from "${schema}".licenses`,
  );
  t.ok(rows.length >= 4, `the licenses are in Postgres (${rows.length})`);
  const roles = new Map([[licenseKey, 'the main license'], [otherKey, 'the license patched on the failure paths']]);
  for (const row of rows) {
    const whose = roles.get(row.license_key) ?? `license ${row.license_key}, created on a failure path`;
    secret(`password hash of ${whose}`, row.password_hash);
    // the digest alone (the last field), should a log cut the hash up
    const digest = row.password_hash.split('$').pop() ?? '';
    if (digest.length >= 16) secret(`password hash of ${whose} (digest)`, digest);
  }
  // the signatures alone, should a log cut a token up
  for (const s of [...secrets]) {
    if (!s.label.includes('token') || s.label.includes('admin')) continue;
    const signature = s.value.split('.')[2];
    if (signature !== undefined && signature.length >= 16) secrets.push({ label: `${s.label} (signature)`, value: signature });
  }

  const lines = server.lines;
  t.ok(lines.length > 0, `the server logged (${lines.length} lines)`);
  const patterns: { label: string; pattern: RegExp }[] = [
    { label: 'an argon2 hash', pattern: /\$argon2id?\$/ },
    { label: 'a JWT', pattern: /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+\./ },
    { label: "'Bearer '", pattern: /Bearer / },
  ];
  const failures: string[] = [];
  for (const { label, pattern } of patterns) {
    const offending = lines.filter((l) => pattern.test(l.text));
    t.equal(offending.length, 0, `no log line contains ${label}`, { offending: offending.slice(0, 5).map((l) => l.text) });
    if (offending.length > 0) failures.push(label);
  }
  for (const { label, value } of secrets) {
    const offending = lines.filter((l) => l.text.includes(value));
    t.equal(offending.length, 0, `no log line contains the ${label}`, { offending: offending.slice(0, 5).map((l) => l.text) });
    if (offending.length > 0) failures.push(label);
  }
  if (failures.length > 0) t.comment(`leaked: ${failures.join('; ')}`);

  // the failures were logged, so the test cannot pass by logging nothing
  const loud = (window: LogLine[], mention: RegExp) => window.filter((l) => levelOf(l) >= 40 && mention.test(l.text));
  t.ok(loud(oomLines, /OOM|maxmemory/i).length > 0, 'Redis out of memory: logged at warn or above, naming the error',
    { logged: oomLines.map((l) => l.text.slice(0, 300)) });
  t.ok(loud(noReplicaLines, /NOREPLICAS|replica/i).length > 0, 'Redis NOREPLICAS: logged at warn or above, naming the error',
    { logged: noReplicaLines.map((l) => l.text.slice(0, 300)) });
  t.ok(loud(aclLines, /NOPERM|permission/i).length > 0, 'Redis NOPERM: logged at warn or above, naming the error',
    { logged: aclLines.map((l) => l.text.slice(0, 300)) });
  t.ok(loud(pgLines, /postgres|CONNECTION_|ECONN|EPIPE|connect|socket|closed/i).length > 0,
    'Postgres cut: logged at warn or above, naming the failure', { logged: pgLines.map((l) => l.text.slice(0, 300)) });
});
