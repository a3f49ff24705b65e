import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ADMIN_TOKEN, DATABASE_URL, REDIS_URL, startHarness, uniqueName } from '../helpers/harness.js';
import { runScript } from '../helpers/licensectl.js';

// make reset-dev (src/cli/resetDev.ts): the development data of `make run` back to nothing,
// and only that: the Redis keys of .env.dev's prefix and the service's schema of its
// database, never while the service answers, never without an .env.dev, never a schema
// holding tables that are not the service's; and the next start begins empty.

const RESET_DEV = fileURLToPath(new URL('../../src/cli/resetDev.js', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'reset-dev-'));

function devEnv(name: string, vars: Record<string, string>): string {
  const file = path.join(dir, name);
  writeFileSync(file, `# development settings written by make run\n${Object.entries(vars).map(([k, v]) => `${k}=${v}`).join('\n')}\n`);
  return file;
}

t.test('reset-dev: refuses while the service answers, then empties its prefix and schema alone', async (t) => {
  const h = await startHarness(t, 'resetdev');
  const lic = await h.createLicense({ totalQuota: 5 });
  t.equal((await h.getToken(lic.licenseKey, lic.password)).status, 200);
  const other = uniqueName('resetother');
  await h.redis.set(`${other}:kept`, '1');
  t.teardown(() => h.redis.del(`${other}:kept`).then(() => undefined));
  const file = devEnv('dev.env', {
    JWT_SECRET: '0123456789abcdef0123456789abcdef', ADMIN_TOKEN, ALLOW_HTTP: '1', HOST: '127.0.0.1', PORT: new URL(h.url).port,
    DATABASE_URL, PG_SCHEMA: h.config.pgSchema, REDIS_URL, REDIS_PREFIX: h.config.redisPrefix, LOG_LEVEL: 'silent',
  });
  const keysOf = async () => (await h.redis.keys(`${h.config.redisPrefix}:*`)).length;
  const schemaThere = async () => (await h.sql`select exists(select 1 from pg_namespace where nspname = ${h.config.pgSchema}) as there`)[0]?.there as boolean;

  const running = await runScript(RESET_DEV, [], { env: { DEV_ENV_FILE: file } });
  t.equal(running.code, 1, 'the service answers: refused');
  t.match(running.stderr, /^reset-dev: a service answers on 127\.0\.0\.1:\d+: stop `make run` first/);
  t.ok(await keysOf() > 0, 'its keys are still there');
  t.ok(await schemaThere(), 'its schema too');

  const anyPort = await runScript(RESET_DEV, [], { env: { DEV_ENV_FILE: file, PORT: '0' } });
  t.same([anyPort.code, anyPort.stdout], [1, ''], 'PORT=0: whether the service runs cannot be seen: refused');
  t.match(anyPort.stderr, /^reset-dev: PORT is 0 \(a port chosen at each start\)/);
  t.ok(await schemaThere(), 'the schema is still there');

  await h.deployment?.stop();
  const reset = await runScript(RESET_DEV, [], { env: { DEV_ENV_FILE: file } });
  t.equal(reset.code, 0, reset.stderr);
  t.match(reset.stdout, new RegExp(`dropped schema "${h.config.pgSchema}" .*\\(\\d+ tables\\) and \\d+ Redis keys under "${h.config.redisPrefix}:"`));
  t.equal(await keysOf(), 0, 'no key of the prefix is left');
  t.notOk(await schemaThere(), 'the schema is gone');
  t.equal(await h.redis.get(`${other}:kept`), '1', 'a key of another prefix is untouched');

  // the next start makes the schema again, empty: the walk-through's license key is free
  const again = await startHarness(t, 'resetdevagain', { REDIS_PREFIX: h.config.redisPrefix, PG_SCHEMA: h.config.pgSchema });
  const created = await again.admin('POST', '/admin/v1/licenses', {
    licenseKey: lic.licenseKey, organizationName: 'Örnek', password: 's3cret-pass', totalQuota: 3, expiryDate: '2099-12-31T23:59:59Z',
  });
  t.equal(created.status, 201, `the same license key is created again: ${JSON.stringify(created.body)}`);
});

t.test('reset-dev: no .env.dev, or a schema with tables not the service\'s: nothing is touched', async (t) => {
  const none = await runScript(RESET_DEV, [], { env: { DEV_ENV_FILE: path.join(dir, 'absent.env') } });
  t.equal(none.code, 1);
  t.match(none.stderr, /^reset-dev: no .*absent\.env: this resets the development data of `make run` alone/);

  const h = await startHarness(t, 'resetforeign');
  await h.deployment?.stop();
  await h.sql.unsafe(`create table "${h.config.pgSchema}".invoices (id int)`);
  const file = devEnv('foreign.env', {
    JWT_SECRET: '0123456789abcdef0123456789abcdef', ADMIN_TOKEN, ALLOW_HTTP: '1', HOST: '127.0.0.1', PORT: new URL(h.url).port,
    DATABASE_URL, PG_SCHEMA: h.config.pgSchema, REDIS_URL, REDIS_PREFIX: h.config.redisPrefix, LOG_LEVEL: 'silent',
  });
  const refused = await runScript(RESET_DEV, [], { env: { DEV_ENV_FILE: file } });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /also holds tables that are not the service's \(invoices\): nothing was dropped/);
  const [row] = await h.sql`select count(*)::int as n from licenses`;
  t.equal(row?.n, 0, 'the service\'s tables are still there');
});
