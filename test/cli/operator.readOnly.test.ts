import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import postgres from 'postgres';
import t from 'tap';
import { connectPostgres } from '../../src/db/pg.js';
import { sqlDir } from '../../src/paths.js';
import { DATABASE_URL, REDIS_URL, uniqueName } from '../helpers/harness.js';
import { DEAD_LETTERS, runScript, WEBHOOK_EVENTS, type CliResult } from '../helpers/licensectl.js';
import type { Asserts } from '../helpers/shapes.js';

// The read-only operator commands never create or migrate anything: against a database that
// does not exist, a schema that does not exist or one older than the code, webhook-events
// says so in one line naming what to check and exits 1, and afterwards the database and the
// schema are as they were. dead-letters reads Redis only: on any prefix it answers, and says
// on stderr which prefix it read.

const admin = postgres(DATABASE_URL, { onnotice: () => {}, max: 1 });
t.teardown(() => admin.end({ timeout: 2 }));

const missingDb = `t_missing_${randomBytes(4).toString('hex')}`;
const missingDbUrl = (() => {
  const u = new URL(DATABASE_URL);
  u.pathname = `/${missingDb}`;
  return u.toString();
})();

const databaseExists = async (name: string): Promise<boolean> =>
  (await admin`select 1 from pg_database where datname = ${name}`).length > 0;
const schemaExists = async (name: string): Promise<boolean> =>
  (await admin`select 1 from information_schema.schemata where schema_name = ${name}`).length > 0;

function env(databaseUrl: string, schema: string, prefix = uniqueName('oprdonly')): Record<string, string> {
  return { DATABASE_URL: databaseUrl, PG_SCHEMA: schema, REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'silent' };
}

function expectRefused(t: Asserts, r: CliResult, message: RegExp): void {
  t.equal(r.code, 1, `exit 1: ${r.stdout}${r.stderr}`);
  t.equal(r.stdout, '', 'nothing on stdout');
  t.match(r.stderr, message);
  t.equal(r.stderr.split('\n').filter(Boolean).length, 1, `one line: ${r.stderr}`);
  t.match(r.stderr, /^webhook-events: /, 'named by the command');
}

t.test('webhook-events on a database that does not exist: refused, nothing created', async (t) => {
  t.notOk(await databaseExists(missingDb), 'the database does not exist before');
  for (const command of ['count', 'list']) {
    const r = await runScript(WEBHOOK_EVENTS, [command], { env: env(missingDbUrl, 'public') });
    expectRefused(t, r, new RegExp(`database "${missingDb}" does not exist .*check DATABASE_URL, or start the service once`));
  }
  t.notOk(await databaseExists(missingDb), 'nor after');
});

t.test('webhook-events on a schema that does not exist: refused, nothing created', async (t) => {
  const schema = uniqueName('nosuchschema');
  for (const command of ['count', 'list']) {
    const r = await runScript(WEBHOOK_EVENTS, [command], { env: env(DATABASE_URL, schema) });
    expectRefused(t, r, new RegExp(`schema "${schema}" does not exist in database "\\w+": check PG_SCHEMA .*start the service once`));
  }
  t.notOk(await schemaExists(schema), 'the schema still does not exist');
});

t.test('webhook-events on a schema without the service\'s tables, or older than the code: refused, unchanged', async (t) => {
  const empty = uniqueName('emptyschema');
  const old = uniqueName('oldschema');
  t.teardown(() => admin.unsafe(`drop schema if exists "${empty}" cascade; drop schema if exists "${old}" cascade`));
  await admin.unsafe(`create schema "${empty}"`);
  const emptyRun = await runScript(WEBHOOK_EVENTS, ['count'], { env: env(DATABASE_URL, empty) });
  expectRefused(t, emptyRun, new RegExp(`schema "${empty}" in database "\\w+" holds no tables of this service: check PG_SCHEMA`));
  t.same(await admin`select table_name from information_schema.tables where table_schema = ${empty}`, [], 'still no table');

  // what an older version left: its migrations recorded, the later ones not
  await admin.unsafe(`create schema "${old}"; create table "${old}".schema_migrations (name text primary key, applied_at timestamptz not null default now());
    insert into "${old}".schema_migrations (name) values ('001_init.sql'), ('002_quota_purchases.sql')`);
  const oldRun = await runScript(WEBHOOK_EVENTS, ['list'], { env: env(DATABASE_URL, old) });
  const latest = readdirSync(sqlDir).filter((f) => /^\d+_.*\.sql$/.test(f)).sort().at(-1) as string;
  expectRefused(t, oldRun, new RegExp(`is older than this code \\(not applied: 003_\\S+, .*${latest.replace(/\./g, '\\.')}\\): start the service of this version once`));
  const [applied] = await admin.unsafe(`select count(*)::int as n from "${old}".schema_migrations`);
  t.equal(applied?.n, 2, 'no migration ran');
});

t.test('webhook-events on the service\'s migrated schema answers', async (t) => {
  const schema = uniqueName('migrated');
  const sql = await connectPostgres(DATABASE_URL, schema, 1); // what the service does at start
  t.teardown(async () => {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`);
    await sql.end({ timeout: 2 });
  });
  const r = await runScript(WEBHOOK_EVENTS, ['count'], { env: env(DATABASE_URL, schema) });
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { pending: 0, delivered: 0, failed: 0 });
  const list = await runScript(WEBHOOK_EVENTS, ['list'], { env: env(DATABASE_URL, schema) });
  t.equal(list.code, 0, list.stderr);
  t.equal(list.stdout, '', 'no failed events');
});

t.test('dead-letters reads Redis only: any prefix answers, and stderr names the prefix read', async (t) => {
  const prefix = uniqueName('unusedprefix');
  const count = await runScript(DEAD_LETTERS, ['count'], { env: env(missingDbUrl, 'no_such_schema', prefix) });
  t.equal(count.code, 0, count.stderr);
  t.equal(count.stdout, '0\n');
  t.match(count.stderr, new RegExp(`^dead-letters: Redis prefix "${prefix}" at redis://`));
  const list = await runScript(DEAD_LETTERS, ['list'], { env: env(missingDbUrl, 'no_such_schema', prefix) });
  t.equal(list.code, 0, list.stderr);
  t.equal(list.stdout, '');
  t.match(list.stderr, `"${prefix}"`);
  t.notOk(await databaseExists(missingDb), 'no database created');
  t.notOk(await schemaExists('no_such_schema'), 'no schema created');
});

t.test('dead-letters with Redis not answering: one line naming where it looked and why, exit 1', async (t) => {
  const r = await runScript(DEAD_LETTERS, ['count'], { env: { REDIS_URL: 'redis://127.0.0.1:1' } });
  t.equal(r.code, 1);
  t.equal(r.stdout, '');
  t.match(r.stderr, /\ndead-letters: cannot reach Redis at redis:\/\/127\.0\.0\.1:1 \(.*ECONNREFUSED.*\): check REDIS_URL\n$/);
  t.notMatch(r.stderr, /maxRetriesPerRequest/, 'not ioredis\'s retry counter');
});
