import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { projectRoot } from '../../src/paths.js';
import { freeLoopbackPort } from '../helpers/processes.js';

// scripts/services.sh on a machine without Redis's or Postgres's binaries (what make run and
// make test call first): where it may not install, it prints the one command to run and
// stops; as root or with passwordless sudo it installs with apt-get and goes on. The
// machine is simulated by a PATH of stubs: the real package manager is never called.

const SCRIPT = path.join(projectRoot, 'scripts/services.sh');
const SHARED_REDIS = 'redis://127.0.0.1:6379';
const SHARED_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';

interface Machine {
  /** the stub bin folder, the only PATH the script gets */
  bin: string;
  /** what the stub apt-get was asked, one call a line */
  aptLog: string;
  dir: string;
}

/** A bare machine: the basic tools, `id` saying uid 1000, `sudo` refusing. */
function bareMachine(t: Test): Machine {
  const dir = mkdtempSync(path.join(tmpdir(), 'services-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  for (const tool of ['dirname', 'mkdir', 'seq', 'sleep', 'env', 'cat', 'chmod']) symlinkSync(`/usr/bin/${tool}`, path.join(bin, tool));
  stub(bin, 'id', 'echo 1000');
  stub(bin, 'sudo', 'exit 1');
  return { bin, aptLog: path.join(dir, 'apt.log'), dir };
}

function stub(bin: string, name: string, body: string): void {
  writeFileSync(path.join(bin, name), `#!/bin/bash\n${body}\n`);
  chmodSync(path.join(bin, name), 0o755);
}

/** apt-get that logs its arguments; `install -y redis-server` puts a redis-server running the real one on PATH. */
function withAptGet(m: Machine): void {
  stub(m.bin, 'apt-get', `echo "$*" >> ${m.aptLog}
[[ " $* " == *" redis-server "* ]] && printf '#!/bin/bash\\nexec /usr/bin/redis-server "$@"\\n' > ${m.bin}/redis-server && chmod +x ${m.bin}/redis-server
exit 0`);
}

function runServices(m: Machine, env: Record<string, string>): { status: number | null; stderr: string } {
  const r = spawnSync('/bin/bash', [SCRIPT], {
    env: { PATH: m.bin, SERVICES_DIR: path.join(m.dir, 'run'), ...env }, encoding: 'utf8', timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr };
}

const aptCalls = (m: Machine): string[] => (existsSync(m.aptLog) ? readFileSync(m.aptLog, 'utf8').trim().split('\n') : []);

t.test('no redis-server, no rights to install: the one command to run, exit 1, nothing installed', async (t) => {
  const m = bareMachine(t);
  withAptGet(m);
  const r = runServices(m, { REDIS_URL: `redis://127.0.0.1:${await freeLoopbackPort()}`, DATABASE_URL: SHARED_POSTGRES });
  t.equal(r.status, 1, 'stops');
  t.match(r.stderr, /redis-server \(Redis is not answering on 127\.0\.0\.1:\d+\) is not installed\.\n.*Run: sudo apt-get update && sudo apt-get install -y --no-install-recommends redis-server\n/);
  t.same(aptCalls(m), [], 'apt-get never called');
});

t.test('no redis-server and no apt-get: says to use the package manager', async (t) => {
  const m = bareMachine(t);
  const r = runServices(m, { REDIS_URL: `redis://127.0.0.1:${await freeLoopbackPort()}`, DATABASE_URL: SHARED_POSTGRES });
  t.equal(r.status, 1);
  t.match(r.stderr, /there is no apt-get here: install redis-server with your package manager/);
});

t.test('no Postgres server binaries, no rights to install: the one command to run', async (t) => {
  const m = bareMachine(t);
  withAptGet(m);
  const r = runServices(m, {
    REDIS_URL: SHARED_REDIS, DATABASE_URL: `postgres://postgres@127.0.0.1:${await freeLoopbackPort()}/test`, PG_BINDIR: path.join(m.dir, 'none'),
  });
  t.equal(r.status, 1);
  t.match(r.stderr, /Postgres's server \(not answering on 127\.0\.0\.1:\d+\) is not installed\.\n.*Run: sudo apt-get update && sudo apt-get install -y --no-install-recommends postgresql\n/);
  t.same(aptCalls(m), [], 'apt-get never called');
});

t.test('passwordless sudo: installs redis-server with apt-get, starts a private Redis and goes on', async (t) => {
  const m = bareMachine(t);
  withAptGet(m);
  stub(m.bin, 'sudo', '[ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@"');
  const port = await freeLoopbackPort();
  const pidFile = path.join(m.dir, 'run/redis/redis.pid');
  t.teardown(() => {
    if (existsSync(pidFile)) spawnSync('kill', [readFileSync(pidFile, 'utf8').trim()]);
  });
  const r = runServices(m, { REDIS_URL: `redis://127.0.0.1:${port}`, DATABASE_URL: SHARED_POSTGRES });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stderr, /installing redis-server \(apt-get\)/);
  t.same(aptCalls(m), ['install -y --no-install-recommends redis-server'], 'one apt-get install, through sudo');
  t.match(r.stderr, new RegExp(`Redis on 127\\.0\\.0\\.1:${port} and Postgres on 127\\.0\\.0\\.1:5432 are answering`));
  const ping = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
  t.equal(ping.stdout.trim(), 'PONG', 'the private Redis answers');
});

t.test('neither Redis nor Postgres installed: one command names both, with an apt-get update first', async (t) => {
  const m = bareMachine(t);
  withAptGet(m);
  const r = runServices(m, {
    REDIS_URL: `redis://127.0.0.1:${await freeLoopbackPort()}`,
    DATABASE_URL: `postgres://postgres@127.0.0.1:${await freeLoopbackPort()}/test`, PG_BINDIR: path.join(m.dir, 'none'),
  });
  t.equal(r.status, 1);
  t.match(r.stderr, /Run: sudo apt-get update && sudo apt-get install -y --no-install-recommends redis-server postgresql\n/);
  t.same(aptCalls(m), [], 'apt-get never called');
});

t.test('a Postgres that answers but refuses the login (Debian\'s own cluster asks for a password): says why and how', async (t) => {
  const m = bareMachine(t);
  const pgBin = path.join(m.dir, 'pgbin');
  mkdirSync(pgBin);
  stub(pgBin, 'pg_isready', 'exit 0');
  stub(pgBin, 'psql', 'echo \'psql: error: connection to server at "127.0.0.1", port 5433 failed: fe_sendauth: no password supplied\' >&2; exit 2');
  const r = runServices(m, { REDIS_URL: SHARED_REDIS, DATABASE_URL: 'postgres://postgres@127.0.0.1:5433/licensing', PG_BINDIR: pgBin });
  t.equal(r.status, 1, 'stops instead of letting the service fail later');
  t.match(r.stderr, /Postgres on 127\.0\.0\.1:5433 answers but refuses DATABASE_URL's login: fe_sendauth: no password supplied\n/);
  t.match(r.stderr, /ALTER ROLE postgres PASSWORD 'dev'.* DATABASE_URL=postgres:\/\/postgres:dev@127\.0\.0\.1:5433\/licensing/);

  stub(pgBin, 'psql', 'echo \'psql: error: connection to server at "127.0.0.1", port 5433 failed: FATAL:  database "licensing" does not exist\' >&2; exit 2');
  const missingDatabase = runServices(m, { REDIS_URL: SHARED_REDIS, DATABASE_URL: 'postgres://postgres@127.0.0.1:5433/licensing', PG_BINDIR: pgBin });
  t.equal(missingDatabase.status, 0, 'a database not there yet is fine: the service creates it');
});

// As root (CI, containers), a checkout under /root (mode 700) cannot be entered by the postgres
// user that the private Postgres runs as: its instance lives under /var/lib instead, linked.
t.test('as root, a checkout the postgres user cannot enter: the private Postgres lives under /var/lib, linked as pg', {
  skip: process.getuid?.() !== 0 ? 'needs root' : false,
}, async (t) => {
  const closed = mkdtempSync(path.join(tmpdir(), 'services-closed-')); // mode 700
  const run = path.join(closed, 'run');
  const port = await freeLoopbackPort();
  const env = { ...process.env, SERVICES_DIR: run, REDIS_URL: SHARED_REDIS, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test` };
  t.teardown(() => {
    const pg = path.join(run, 'pg');
    if (existsSync(path.join(pg, 'data/postmaster.pid'))) {
      const pgctl = spawnSync('bash', ['-c', 'ls /usr/lib/postgresql/*/bin/pg_ctl | head -1'], { encoding: 'utf8' }).stdout.trim();
      spawnSync('runuser', ['-u', 'postgres', '--', pgctl, '-D', path.join(pg, 'data'), '-m', 'immediate', 'stop'], { cwd: '/' });
    }
    const target = spawnSync('readlink', ['-f', pg], { encoding: 'utf8' }).stdout.trim();
    if (target.startsWith('/var/lib/license-service-dev/')) rmSync(target, { recursive: true, force: true });
    rmSync(closed, { recursive: true, force: true });
  });
  const r = spawnSync('/bin/bash', [SCRIPT], { env, encoding: 'utf8', timeout: 120_000 });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stderr, new RegExp(`Postgres on 127\\.0\\.0\\.1:${port} are answering`));
  const target = spawnSync('readlink', ['-f', path.join(run, 'pg')], { encoding: 'utf8' }).stdout.trim();
  t.match(target, /^\/var\/lib\/license-service-dev\/\d+$/, 'the instance is under /var/lib, linked from the checkout');
  const ready = spawnSync('bash', ['-c', `$(ls /usr/lib/postgresql/*/bin/pg_isready | head -1) -h 127.0.0.1 -p ${port}`]);
  t.equal(ready.status, 0, 'the private Postgres answers');
});
