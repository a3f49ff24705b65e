import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { sqlDir } from '../../src/paths.js';
import { createRedis } from '../../src/redis/client.js';
import { dayOf, partitionName, USAGE_TABLES } from '../../src/usage/partitions.js';
import { startDeployed } from '../helpers/deployed.js';
import { DATABASE_URL, deleteKeys, Harness, testEnv, uniqueName } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { startNginxFront } from '../helpers/nginxFront.js';
import { rawExchange, rawRequest } from '../helpers/rawHttp.js';
import { waitFor } from '../helpers/wait.js';

// The deployment's database step (docs/deployment.md, step 1) run as an operator runs it, then
// the service started as deployed (npm start: a primary, one server process per core, the
// usage worker in child 0) on what it made: a role that is no superuser and may create no
// database or role. The service must need nothing more: it migrates at start, serves, its usage
// worker writes the books and makes the usage tables' daily partitions, and it starts again
// on the migrated database. Each case makes its own role and database and drops them.

const run = promisify(execFile);

/**
 * The step's two shell blocks, read from docs/deployment.md, step 1, as the operator pastes
 * them (Debian 12, PostgreSQL 15, whose public schema only its database's owner may create in:
 * so the role owns the database; or, in a shared database, a schema of its own, PG_SCHEMA).
 * They print the DATABASE_URL the settings file gets (step 3).
 */
function databaseStep(): [string, string] {
  const doc = readFileSync(fileURLToPath(new URL('../../../docs/deployment.md', import.meta.url)), 'utf8');
  const step = doc.slice(doc.indexOf('1. **Redis and Postgres.**'), doc.indexOf('2. **The service\'s files**'));
  const blocks = [...step.matchAll(/^ {3}```sh\n([\s\S]*?)^ {3}```$/gm)].map((m) => (m[1] as string).replace(/^ {3}/gm, ''));
  if (blocks.length !== 2) throw new Error(`docs/deployment.md, step 1: expected two sh blocks, found ${blocks.length}`);
  return blocks as [string, string];
}
const [OWN_DATABASE, SHARED_DATABASE] = databaseStep();

const DAY_MS = 86_400_000;
const server = new URL(DATABASE_URL);

/** The superuser's URL of one database of the test server. */
function superuserUrl(database: string): string {
  const url = new URL(DATABASE_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Runs a step's commands in bash with the test's names: `license` (the role, its database
 * and schema) becomes `name`, `shared` becomes `shared`'s value, psql reaches the test server
 * as its superuser through libpq's variables instead of through sudo (Debian's peer login), and
 * the address is the test server's. Resolves with the settings the commands printed (KEY=value
 * lines).
 */
async function runStep(commands: string, name: string, shared = 'shared'): Promise<Record<string, string>> {
  const sudo = 'sudo -u postgres psql';
  if (!commands.includes(sudo)) throw new Error(`the step no longer runs "${sudo}": update runStep`);
  const script = commands
    .replaceAll(sudo, 'psql')
    .replace(/\blicense\b/g, name)
    .replace(/\bshared\b/g, shared)
    .replaceAll('127.0.0.1:5432', server.host);
  const libpq = {
    PGHOST: server.hostname, PGPORT: server.port || '5432', PGUSER: decodeURIComponent(server.username) || 'postgres',
    PGPASSWORD: decodeURIComponent(server.password), PGDATABASE: 'postgres', // sudo -u postgres psql's database; -d wins
  };
  const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...libpq } });
  return Object.fromEntries(stdout.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/**
 * A superuser's pool on the server's postgres database. At teardown the test's databases go
 * (WITH (FORCE): their sessions terminated first), then the role's sessions anywhere else and
 * the role.
 */
function superuser(t: Test, role: string, databases: string[]): postgres.Sql {
  const admin = postgres(superuserUrl('postgres'), { max: 1, onnotice: () => {} });
  t.teardown(async () => {
    for (const db of databases) await admin.unsafe(`drop database if exists "${db}" with (force)`);
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where usename = ${role}`;
    await admin.unsafe(`drop role if exists "${role}"`);
    await admin.end({ timeout: 2 });
  });
  return admin;
}

/** The role as pg_roles has it: what the service connects as may do nothing but log in. */
async function expectPlainRole(t: Test, admin: postgres.Sql, role: string): Promise<void> {
  const [r] = await admin`select rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin
    from pg_roles where rolname = ${role}`;
  t.same(r, { rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false, rolcanlogin: true },
    'the role is no superuser and may create no database or role: it logs in, no more');
  const [member] = await admin`select count(*)::int as n from pg_auth_members m join pg_roles r on r.oid = m.member where r.rolname = ${role}`;
  t.equal(member?.n, 0, 'nor is it a member of another role');
}

/** The service as deployed on `settings` (DATABASE_URL, PG_SCHEMA if any): its Redis keys removed at teardown. */
function deployment(t: Test, settings: Record<string, string>) {
  const env = testEnv('pgrole', { ...settings, LOG_LEVEL: 'info' });
  if (settings.PG_SCHEMA === undefined) delete env.PG_SCHEMA; // its default, public, as the settings file leaves it
  const config = loadConfig(env);
  const redis = new Redis(config.redisUrl);
  const serviceRedis = createRedis(config, 'test-harness');
  t.teardown(async () => {
    await deleteKeys(redis, config.redisPrefix);
    redis.disconnect();
    serviceRedis.disconnect();
  });
  /** starts it (again) and resolves once every process listens: the migrations ran before */
  return async (books: postgres.Sql): Promise<Harness> => {
    const deployed = await startDeployed(t, env);
    return new Harness(deployed, config, redis, books, () => deployed.server.records(), deployed, serviceRedis);
  };
}

/** What the service made in Postgres and did there as the role, after a first start and one redemption. */
async function expectServes(t: Test, h: Harness, role: string, schema: string): Promise<{ firmaId: string; licenseKey: string; password: string }> {
  const files = (await readdir(sqlDir)).filter((f) => /^\d+_.*\.sql$/.test(f)).sort();
  const applied = await h.sql`select name from schema_migrations order by name`;
  t.same(applied.map((r) => r.name as string), files, 'every migration applied at start');
  const owners = await h.sql`select distinct tableowner from pg_tables where schemaname = ${schema}`;
  t.same(owners.map((r) => r.tableowner as string), [role], 'by the role: it owns every table');
  const sessions = await h.sql`select distinct usename from pg_stat_activity where datname = current_database()
    and backend_type = 'client backend' and pid <> pg_backend_pid()`;
  t.same(sessions.map((r) => r.usename as string), [role], 'the service\'s sessions are the role\'s');

  const ready = await h.request('GET', '/readyz');
  t.equal(ready.status, 200, '/readyz 200');
  t.equal(ready.body.postgres, 'ok', 'with Postgres ok');

  const lic = await h.createLicense({ totalQuota: 3 });
  const got = await h.getToken(lic.licenseKey, lic.password);
  t.equal(got.status, 200, 'get-token');
  const spent = await h.validate(got.body.signToken);
  t.same([spent.status, spent.body.usedQuota, spent.body.remainingQuota], [200, 1, 2], 'validate spends a unit');
  await h.drainWorker(20_000);
  const [row] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.used, 1, 'the usage worker wrote the redemption: used_quota 1 in Postgres');
  const used = await h.sql`select token_id from sign_tokens where firma_id = ${lic.firmaId} and status = 'used'`;
  t.same(used.map((r) => r.token_id as string), [claimsOf(got.body.signToken as string).token_id], 'its token used in the audit trail');

  // the worker's partition keeper made the coming days (today's may be the migration's own range)
  const tomorrow = USAGE_TABLES.map((table) => partitionName(table, dayOf(Date.now()) + DAY_MS));
  const made = async () => (await h.sql`select c.relname, pg_get_userbyid(c.relowner) as owner from pg_inherits i
    join pg_class c on c.oid = i.inhrelid where c.relname = any(${tomorrow}) order by 1`).map((r) => `${r.relname as string} ${r.owner as string}`);
  await waitFor('the partition keeper to make tomorrow\'s partitions', async () => (await made()).length === tomorrow.length, 10_000, 100);
  t.same(await made(), tomorrow.map((p) => `${p} ${role}`), 'the usage worker made tomorrow\'s partitions of both usage tables, as the role');
  t.same(h.logs.filter((r) => (r.level as number) >= 50 || /permission denied/.test(JSON.stringify(r))), [],
    'no process logged an error or a refusal');
  return lic;
}

t.test('a role that owns its database: the service migrates, serves, writes its books, starts again and answers through the front', async (t) => {
  const name = uniqueName('pgrole');
  const admin = superuser(t, name, [name]);
  const settings = await runStep(OWN_DATABASE, name);
  t.match(settings.DATABASE_URL, new RegExp(`^postgres://${name}:[0-9a-f]{48}@${server.host}/${name}$`), 'the step prints the DATABASE_URL, with the role\'s password');
  await expectPlainRole(t, admin, name);
  const [db] = await admin`select pg_get_userbyid(datdba) as owner from pg_database where datname = ${name}`;
  t.equal(db?.owner, name, 'the role owns its database');

  const books = postgres(superuserUrl(name), { max: 1, onnotice: () => {} });
  t.teardown(() => books.end({ timeout: 2 }));
  const start = deployment(t, { DATABASE_URL: settings.DATABASE_URL as string, TRUST_PROXY: '1' });
  const h = await start(books);
  const lic = await expectServes(t, h, name, 'public');

  const before = await books`select name, applied_at from schema_migrations order by name`;
  await h.service.stop();
  const again = await start(books);
  t.same([...await books`select name, applied_at from schema_migrations order by name`], [...before],
    'after a restart: it starts again, with nothing more to apply');
  const ready = await again.request('GET', '/readyz');
  t.same([ready.status, ready.body.postgres], [200, 'ok'], '/readyz 200, Postgres ok');
  // as clients reach it in production: through the nginx front of deploy/nginx
  const front = await startNginxFront(t, again.service.port);
  const viaFront = async (path: string, body: unknown) =>
    (await rawExchange(front.tlsPort, rawRequest('POST', path, body), { tls: true, answers: 1 })).answers[0];
  const login = await viaFront('/api/v1/auth/get-token', { licenseKey: lic.licenseKey, password: lic.password, imzaTipi: 0 });
  t.equal(login?.status, 200, `get-token through the front: ${login?.text}`);
  const spent = await viaFront('/api/license/validate', { token: (login?.body as { signToken: string }).signToken });
  t.match(spent?.body, { success: true, usedQuota: 2 }, 'through the front, the license spends its next unit');
  await again.drainWorker(20_000);
  const [row] = await books`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(row?.used, 2, 'and the usage worker writes it: used_quota 2 in Postgres');
});

t.test('a database shared with others: a role owning only its schema there needs no right on the database', async (t) => {
  const name = uniqueName('pgrole');
  const shared = uniqueName('pgshared');
  const admin = superuser(t, name, [shared]);
  await admin.unsafe(`create database "${shared}"`); // another's database: the superuser's
  const settings = await runStep(SHARED_DATABASE, name, shared);
  t.equal(settings.PG_SCHEMA, name, 'the step prints PG_SCHEMA');
  await expectPlainRole(t, admin, name);
  const [rights] = await admin`select has_database_privilege(${name}, ${shared}, 'CREATE') as create,
    pg_get_userbyid(datdba) <> ${name} as not_owner from pg_database where datname = ${shared}`;
  t.same(rights, { create: false, not_owner: true }, 'the role neither owns the database nor may create in it');

  const books = postgres(superuserUrl(shared), { max: 1, onnotice: () => {}, connection: { search_path: name } });
  t.teardown(() => books.end({ timeout: 2 }));
  const h = await deployment(t, settings)(books);
  await expectServes(t, h, name, name);
});
