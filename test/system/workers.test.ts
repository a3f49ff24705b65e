import t from 'tap';
import net from 'node:net';
import { loadConfig } from '../../src/config.js';
import { claimPort } from '../../src/cli/portClaim.js';
import { createLicense, testEnv, testStorage, type TestLicense } from '../helpers/harness.js';
import { clientOf, type Client } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { exitOf, freeLoopbackPort, recordOf as record, SERVER_SCRIPT, spawnLogged, spawnServer, type ExitStatus, type ServerProcess } from '../helpers/processes.js';
import { oneRequestPerConnection, parentOf, type OneShotAnswer } from '../helpers/sockets.js';
import { TokenSource } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// WORKERS=3 (docs/operations.md#processes): the built server runs three processes on one port.
// Single use, quota and the rate limit live in Redis, so they hold whichever process a
// request reaches: every request below goes on a connection of its own, and /proc shows
// which process the kernel gave it to (each burst reaches all three). SIGTERM to the
// primary stops every child gracefully; a child killed is started again.

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

const LIMIT = 40; // RATE_VALIDATE_PER_MIN: per company, shared by the processes
const USED = 'Bu token zaten kullanılmış. Yeni token alınız.';
const NO_QUOTA = 'İmza kotası doldu';

t.test('WORKERS=3: one token, one license and one rate limit hammered from every process; SIGTERM and SIGKILL', async (t) => {
  const port = await freeLoopbackPort();
  const env = testEnv('workers', {
    WORKERS: '3', PORT: String(port), LOG_LEVEL: 'info', QUOTA_CACHE_SECONDS: '0',
    RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_CHECK_QUOTA_PER_MIN: '0', RATE_VALIDATE_PER_MIN: String(LIMIT),
  });
  const config = loadConfig(env);
  const { sql } = testStorage(t, config);
  const server: ServerProcess = await spawnServer(t, env, 30_000);
  const primary = server.child.pid as number;
  const allUp = record(await server.lineMatching((l) => record(l)?.msg === 'listening: all children', 30_000, 'every child listening'));
  let pids = allUp?.pids as number[];
  t.equal(new Set(pids).size, 3, `three child processes (${pids.join(', ')})`);
  t.same(await Promise.all(pids.map(parentOf)), [primary, primary, primary], 'each a child of the primary');
  t.equal(allUp?.port, port, 'on the port asked for');
  const client: Client = clientOf(server.url);

  /** One validate per token, each on its own connection; asserts the burst reached every process. */
  const burst = async (t: TestT, tokens: string[], what: string, afterSend?: () => void): Promise<OneShotAnswer[]> => {
    const answers = await oneRequestPerConnection(port, pids,
      tokens.map((token) => ({ method: 'POST', path: '/api/license/validate', body: { token } })), afterSend);
    t.equal(new Set(answers.map((a) => a.pid)).size, 3, `${what}: the ${tokens.length} connections reached all three processes`);
    return answers;
  };
  const count = (answers: OneShotAnswer[], status: number, message?: string) => answers.filter((a) =>
    a.status === status && (message === undefined || (JSON.parse(a.body) as { message?: string }).message === message)).length;
  const license = (totalQuota: number): Promise<TestLicense> => createLicense(client, { totalQuota });
  const usedInPostgres = async (lic: TestLicense, expected: number): Promise<number> => pollUntil(async () => {
    const [row] = await sql<{ used: number }[]>`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
    return row?.used ?? -1;
  }, (used) => used === expected, { timeoutMs: 15_000 });
  const okTotal: number[] = [];

  t.test('one sign token, 40 validates at once: exactly one 200, the rest "already used"', async (t) => {
    const lic = await license(100);
    const token = await new TokenSource(client, lic).next();
    const answers = await burst(t, Array(LIMIT).fill(token), 'one token');
    t.equal(count(answers, 200), 1, 'one 200');
    t.equal(count(answers, 400, USED), LIMIT - 1, 'every other: already used');
    t.equal(await usedInPostgres(lic, 1), 1, 'one unit spent in Postgres');
    okTotal.push(1);
  });

  t.test('a license of quota 10, 40 tokens redeemed at once: exactly 10 200s, the rest quota exhausted', async (t) => {
    const lic = await license(10);
    const tokens = await new TokenSource(client, lic).many(LIMIT);
    const answers = await burst(t, tokens, 'one license');
    t.equal(count(answers, 200), 10, 'ten 200s');
    t.equal(count(answers, 400, NO_QUOTA), LIMIT - 10, 'the rest: quota exhausted');
    const usedQuotas = answers.filter((a) => a.status === 200).map((a) => (JSON.parse(a.body) as { usedQuota: number }).usedQuota);
    t.same(usedQuotas.sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'usedQuota 1..10, one each');
    t.equal(await usedInPostgres(lic, 10), 10, 'the worker wrote exactly the quota to Postgres');
    okTotal.push(10);
  });

  t.test(`RATE_VALIDATE_PER_MIN=${LIMIT}, 60 tokens of one company at once: exactly ${LIMIT} 200s, the rest 429`, async (t) => {
    const lic = await license(100);
    const tokens = await new TokenSource(client, lic).many(60);
    const answers = await burst(t, tokens, 'rate limit');
    t.equal(count(answers, 200), LIMIT, `${LIMIT} 200s`);
    t.equal(count(answers, 429), 60 - LIMIT, 'the rest 429');
    t.equal(await usedInPostgres(lic, LIMIT), LIMIT, 'the limit spent in Postgres');
    okTotal.push(LIMIT);
  });

  t.test('a child killed with SIGKILL is started again and serves', async (t) => {
    const victim = pids[0] as number;
    process.kill(victim, 'SIGKILL');
    const restarted = record(await server.lineMatching((l) => {
      const r = record(l);
      return r?.msg === 'listening' && r.child === 0 && r.pid !== victim;
    }, 30_000, 'child 0 listening again'));
    const fresh = restarted?.pid as number;
    t.equal(await parentOf(fresh), primary, `the new child 0 (${fresh}) is the primary's`);
    t.match(server.text('stdout'), /"child":0,"pid":\d+,"code":null,"signal":"SIGKILL".*"child died: restarting it"/, 'the primary logged the death');
    pids = [fresh, ...pids.slice(1)];
    const answers = await oneRequestPerConnection(port, pids, Array(30).fill({ method: 'GET', path: '/healthz' }));
    t.ok(answers.some((a) => a.pid === fresh && a.status === 200), 'the new child answers');
    t.ok(answers.every((a) => a.status === 200), 'every process answers');
  });

  t.test('SIGTERM to the primary with validates in flight: all answered, every child exits 0, nothing lost', async (t) => {
    const lic = await license(1000);
    const tokens = await new TokenSource(client, lic).many(30);
    const stopping: { exit?: Promise<ExitStatus> } = {};
    const answers = await burst(t, tokens, 'in flight', () => {
      stopping.exit = server.stop('SIGTERM', 30_000);
    });
    t.equal(count(answers, 200), 30, 'every validate in flight answered 200');
    const exit = await (stopping.exit ?? Promise.reject(new Error('not stopped')));
    t.same([exit.timedOut, exit.code, exit.signal], [false, 0, null], `the primary exited 0 (stderr: ${server.text('stderr')})`);
    const childExits = server.records().filter((r) => r.msg === 'child stopped');
    t.same(childExits.map((r) => r.code), [0, 0, 0], 'three children stopped, each with exit code 0');
    t.same(childExits.map((r) => r.pid).sort(), [...pids].sort(), 'the three running children');
    const ids = answers.map((_, i) => claimsOf(tokens[i] as string).token_id).sort();
    const used = await sql<{ token_id: string }[]>`select token_id from sign_tokens where firma_id = ${lic.firmaId} and status = 'used'`;
    t.same(used.map((r) => r.token_id).sort(), ids, 'Postgres holds every token answered 200, written before the exit');
    okTotal.push(30);
    const [all] = await sql<{ n: number }[]>`select coalesce(sum(used_quota), 0)::int as n from licenses`;
    t.equal(all?.n, okTotal.reduce((a, b) => a + b, 0), 'across the test, the units spent in Postgres equal the 200s');
  });
});

t.test('WORKERS refused unless a whole number from 1; children that cannot start stop the primary', async (t) => {
  for (const bad of ['0', 'two', '-1', '1.5']) {
    const server = spawnLogged(t, SERVER_SCRIPT, testEnv('workersbad', { WORKERS: bad }));
    const exit = await exitOf(server.child, 15_000);
    await server.stop();
    t.same([exit.code, exit.signal], [1, null], `WORKERS=${bad}: exit 1`);
    t.match(server.text('stderr'), /^license-service: refusing to start: WORKERS must be (a whole number|between 1 and 1024)[^\n]*$/, `WORKERS=${bad}: one line naming WORKERS`);
  }

  // Postgres refuses at once: every child says why and exits 1, and so does the primary
  const server = spawnLogged(t, SERVER_SCRIPT, testEnv('workersdown', { WORKERS: '2', LOG_LEVEL: 'info', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' }));
  const exit = await exitOf(server.child, 30_000);
  await server.stop();
  t.same([exit.timedOut, exit.code], [false, 1], 'the primary exited 1');
  t.match(server.text('stderr'), /license-service: cannot start: /, 'a child said why');
  const children = server.records().filter((r) => r.msg === 'child started').map((r) => r.pid as number);
  t.equal(children.length, 2, 'two children were started');
  t.same(await Promise.all(children.map(parentOf)), [null, null], 'neither is left running');
});

t.test('a child that keeps dying soon after its start: restarted with a doubling wait, then the primary gives up', async (t) => {
  const env = testEnv('workersloop', { WORKERS: '2', PORT: String(await freeLoopbackPort()), LOG_LEVEL: 'info' });
  testStorage(t, loadConfig(env));
  const server = await spawnServer(t, env, 30_000);
  // a child that dies before the primary heard from every child stops the start instead
  await server.lineMatching((l) => record(l)?.msg === 'listening: all children', 30_000, 'every child listening');
  const listeningChild1 = (except: number[]) => server.lineMatching((l) => {
    const r = record(l);
    return r?.msg === 'listening' && r.child === 1 && !except.includes(r.pid as number);
  }, 30_000, 'child 1 listening');
  const killed: number[] = [];
  for (let death = 1; death <= 6; death++) {
    const pid = record(await listeningChild1(killed))?.pid as number;
    killed.push(pid);
    process.kill(pid, 'SIGKILL');
  }
  const exit = await exitOf(server.child, 30_000);
  await server.stop();
  t.same([exit.timedOut, exit.code], [false, 1], 'the primary exited 1');
  const records = server.records();
  t.same(records.filter((r) => r.msg === 'child died: restarting it').map((r) => r.restartInMs), [250, 500, 1000, 2000, 4000],
    'five restarts, the wait doubling');
  t.ok(records.some((r) => r.msg === 'a child keeps dying soon after its start: giving up'), 'the sixth death in a row: given up');
  t.same(records.filter((r) => r.msg === 'child stopped').map((r) => [r.child, r.code]), [[0, 0]], 'child 0 stopped gracefully');
});

t.test('a port already served: another service refuses to start on it, and the first keeps answering alone', async (t) => {
  const port = await freeLoopbackPort();
  const env = testEnv('workersport', { WORKERS: '2', PORT: String(port), LOG_LEVEL: 'info', RATE_CHECK_QUOTA_PER_MIN: '0' });
  testStorage(t, loadConfig(env));
  const first = await spawnServer(t, env, 30_000);
  const lic = await createLicense(clientOf(first.url), { totalQuota: 5 });

  // uWS binds with SO_REUSEPORT: without the claim, these would have shared the port silently
  for (const workers of ['2', '1']) {
    const second = spawnLogged(t, SERVER_SCRIPT, testEnv('workersport2', { WORKERS: workers, PORT: String(port), LOG_LEVEL: 'info' }));
    const exit = await exitOf(second.child, 30_000);
    await second.stop();
    t.same([exit.timedOut, exit.code], [false, 1], `WORKERS=${workers} on the same port: exit 1`);
    t.equal(second.text('stderr').trim(), `license-service: cannot start: port ${port} is claimed by another license service on this host`,
      `WORKERS=${workers}: one line naming the port`);
  }
  // the lock is the kernel's, across processes: what keeps two PORT=0 starts off one port
  await t.rejects(claimPort('127.0.0.1', port), { name: 'PortTakenError', message: `port ${port} is claimed by another license service on this host` }, 'this test process cannot claim it either');

  const answers = await oneRequestPerConnection(port, record(await first.lineMatching((l) => record(l)?.msg === 'listening: all children', 5000, 'listening'))?.pids as number[],
    Array.from({ length: 20 }, () => ({ method: 'GET', path: `/api/license/check-quota/${lic.licenseKey}` })));
  t.same(answers.map((a) => a.status), answers.map(() => 200), 'the first service answers every connection for its license');

  // anything else listening there (here a plain node:net server) refuses the start as well
  const other = net.createServer();
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => other.close(() => resolve())));
  const otherPort = (other.address() as net.AddressInfo).port;
  const third = spawnLogged(t, SERVER_SCRIPT, testEnv('workersport3', { WORKERS: '2', PORT: String(otherPort), LOG_LEVEL: 'info' }));
  const exit = await exitOf(third.child, 30_000);
  await third.stop();
  t.same([exit.timedOut, exit.code], [false, 1], 'a port another program serves: exit 1');
  t.equal(third.text('stderr').trim(), `license-service: cannot start: port ${otherPort} on 127.0.0.1 is in use by another process`, 'one line naming the port');
});
