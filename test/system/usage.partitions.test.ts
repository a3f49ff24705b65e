import t from 'tap';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { sqlDir } from '../../src/paths.js';
import { EVENT_SEPARATOR } from '../../src/redis/fields.js';
import type { UsageEvent } from '../../src/usage/events.js';
import postgres from 'postgres';
import { newTokenId } from '../../src/tokens/tokenId.js';
import { dayOf, keepPartitions, partitionName, uuidBound } from '../../src/usage/partitions.js';
import { persistEvents } from '../../src/usage/persist.js';
import { adminView } from '../helpers/admin.js';
import { DATABASE_URL, LIVE_COUNTS, startHarness, testEnv, uniqueName, type Harness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { mintTokens } from '../helpers/tokens.js';

// The usage tables partitioned by the token's issue day, by range of token_id, their key
// (sql/009_partitioned_usage.sql, src/usage/partitions.ts): a database of the earlier shape
// migrates with its rows, history and counts unchanged; the worker makes the days ahead; a
// replayed event, whatever its time, and copies inserted at once by two workers count once;
// RETENTION_DAYS drops whole old days of these tables and nothing else.

const DAY = 86_400_000;

/** Every history item of a license, newest first, through the API. */
async function historyOf(h: Harness, lic: { licenseKey: string; password: string }): Promise<Record<string, unknown>[]> {
  const access = (await h.getToken(lic.licenseKey, lic.password, 0)).body.accessToken as string;
  const items: Record<string, unknown>[] = [];
  let query = '?limit=100';
  for (;;) {
    const res = await h.history(lic.licenseKey, access, query);
    if (res.status !== 200) throw new Error(`history: ${res.status}`);
    items.push(...(res.body.data.items as Record<string, unknown>[]));
    const next = res.body.data.nextCursor as string | null;
    if (!next) return items;
    query = `?limit=100&cursor=${encodeURIComponent(next)}`;
  }
}

/** The partition a row of a table sits in, by token id. */
async function partitionsOf(h: Harness, table: 'token_issues' | 'token_redemptions', ids: string[]): Promise<Map<string, string>> {
  const rows = await h.sql.unsafe(`select token_id::text as id, tableoid::regclass::text as part from ${table} where token_id::text = any($1)`, [ids as never]);
  return new Map(rows.map((r) => [r.id as string, r.part as string]));
}

const usedEvent = (tokenId: string, firmaId: string, atMs: number): UsageEvent => ({
  stream: 's', id: '0-1', fields: [], kind: 'used',
  values: ['', tokenId, firmaId, '0', String(atMs), String(atMs - 1000), 'https://replay.example'].join(EVENT_SEPARATOR),
});

t.test('a database of the earlier shape keeps its rows, history and counts', async (t) => {
  // a license made by the service, to copy into the old-shaped schema with its password hash
  const source = await startHarness(t, 'part-source');
  const lic = await source.createLicense({ totalQuota: 100 });
  const [licenseRow] = await source.sql`select * from licenses where firma_id = ${lic.firmaId}`;

  // the schema as the service before this migration left it: sql/001..008 applied, recorded
  const schema = uniqueName('part-old');
  const earlier = (await readdir(sqlDir)).filter((f) => /^\d+_.*\.sql$/.test(f) && f < '009').sort();
  await source.sql.begin(async (tx) => {
    await tx.unsafe(`create schema "${schema}"`);
    await tx.unsafe(`set local search_path to "${schema}"`);
    await tx.unsafe('create table schema_migrations (name text primary key, applied_at timestamptz not null default now())');
    for (const file of earlier) {
      await tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8'));
      await tx`insert into schema_migrations (name) values (${file})`;
    }
    // only the columns the old shape has: later migrations added the rest
    const columns = await tx`select column_name from information_schema.columns where table_schema = ${schema} and table_name = 'licenses'`;
    const oldRow = Object.fromEntries(columns.map((c) => [c.column_name as string, licenseRow?.[c.column_name as string]]));
    await tx`insert into licenses ${tx({ ...oldRow, used_quota: 5 })}`;
    // redemptions ten, seven and four days ago (one a sign's, with its receipt; the one of
    // seven days ago a token of the random v4 ids issued before the v7 ones, sorting past
    // every day), one a minute ago (the service ran until the migration) and one issued two
    // days ahead (a clock ahead); one token issued a day ago and never redeemed; an issue of
    // sql/001's time without an issue time, nor a UUID for an id
    const now = Date.now();
    const at = [now - 10 * DAY, now - 7 * DAY, now - 4 * DAY, now - 60_000, dayOf(now) + 2 * DAY + 3_600_000, now - DAY];
    for (const [i, time] of at.entries()) {
      const id = i === 1 ? `f${randomUUID().slice(1)}` : newTokenId(time - 1000);
      const issued = new Date(time - 1000);
      await tx`insert into token_issues (token_id, firma_id, imza_tipi, issued_at, expires_at)
        values (${id}, ${lic.firmaId}, ${i % 2}, ${issued}, ${new Date(issued.getTime() + 300_000)})`;
      if (i < 5) {
        await tx`insert into token_redemptions (token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256)
          values (${id}::uuid, ${lic.firmaId}, ${i % 2}, ${new Date(issued.getTime() + 1000)}, ${issued}, ${i === 0 ? null : 'https://old.example'},
                  ${i === 2 ? 2 : null}, ${i === 2 ? 'ab'.repeat(32) : null})`;
      }
    }
    await tx`insert into token_issues (token_id, firma_id, imza_tipi) values ('legacy-id', ${lic.firmaId}, 0)`;
  });
  const view = `select token_id, firma_id, imza_tipi, status, issued_at, expires_at, used_at, origin from "${schema}".sign_tokens order by token_id`;
  const redemptions = `select token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256 from "${schema}".token_redemptions order by token_id`;
  const before = { view: await source.sql.unsafe(view), redemptions: await source.sql.unsafe(redemptions) };

  // the service migrates it at start
  const h = await startHarness(t, 'part-migrated', { PG_SCHEMA: schema, ...LIVE_COUNTS });
  const [kind] = await h.sql`select c.relkind from pg_class c where c.oid = 'token_redemptions'::regclass`;
  t.equal(kind?.relkind, 'p', 'token_redemptions is partitioned');
  t.same(await h.sql.unsafe(view), before.view, 'every token, with its status and times, as before (the sign_tokens view)');
  t.same(await h.sql.unsafe(redemptions), before.redemptions, 'every redemption row as before');
  const parts = await h.sql`select tableoid::regclass::text as part, count(*)::int as n from token_redemptions group by 1 order by 1`;
  const ahead = partitionName('token_redemptions', dayOf(Date.now()) + 2 * DAY);
  t.same(parts, [{ part: 'token_redemptions_before', n: 3 }, { part: 'token_redemptions_default', n: 1 }, { part: ahead, n: 1 }],
    'the old rows stay in the old table, now the partition of all ids up to the end of the migration\'s day; the v4 id in DEFAULT; the one issued ahead, in its day (from DEFAULT, as the worker made the day)');
  const [legacy] = await h.sql`select tableoid::regclass::text as part from token_issues where token_id = 'legacy-id'`;
  t.equal(legacy?.part, 'token_issues_default', 'an issue without a time: in the DEFAULT partition');

  const history = await historyOf(h, lic);
  const newestFirst = [...before.redemptions].sort((a, b) => (b.used_at as Date).getTime() - (a.used_at as Date).getTime());
  t.same(history.map((i) => i.tokenId), newestFirst.map((r) => r.token_id as string), 'history lists the old redemptions, newest first');
  t.equal(history.length, 5);
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 5, 'the used quota as it was');

  // new redemptions land in their day's partition (the migration's day: the old table's), and
  // count on top of the old ones
  const { tokens } = await mintTokens(h, lic, 2, 0);
  for (const token of tokens) t.equal((await h.validate(token)).status, 200);
  await h.drainWorker();
  const ids = tokens.map((token) => claimsOf(token).token_id);
  t.same([...(await partitionsOf(h, 'token_redemptions', ids)).values()], ['token_redemptions_before', 'token_redemptions_before'], 'redemptions of the migration\'s day: in the old table');
  t.same([...(await partitionsOf(h, 'token_issues', ids)).values()], ['token_issues_before', 'token_issues_before']);
  const tomorrowId = newTokenId(dayOf(Date.now()) + DAY + 59_000);
  await persistEvents(h.sql, [usedEvent(tomorrowId, lic.firmaId, dayOf(Date.now()) + DAY + 60_000)]);
  t.same([...(await partitionsOf(h, 'token_redemptions', [tomorrowId])).values()], [partitionName('token_redemptions', dayOf(Date.now()) + DAY)], 'one of tomorrow: in tomorrow\'s');
  t.equal((await historyOf(h, lic)).length, 8, 'history: the old redemptions and the new');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 7, 'the live count: the two redeemed through the service on top of the five');
  const [pg] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(pg?.used, 8, 'Postgres\'s: and the one written straight to it');
  const listed = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/tokens?limit=100`);
  t.equal(listed.status, 200);
  const statuses = (listed.body.data.items as { status: string }[]).map((i) => i.status).sort();
  t.equal(statuses.filter((s) => s === 'expired').length, 1, 'the old token never redeemed: expired');
  t.equal(statuses.filter((s) => s === 'used').length, 7, 'the admin list finds every redemption, old and new (of tokens it has issued)');
});

t.test('days are made ahead; a replayed event counts once, whatever its time; rows of a missing day wait in DEFAULT', async (t) => {
  const h = await startHarness(t, 'part-days', LIVE_COUNTS);
  const now = Date.now();
  for (const table of ['token_issues', 'token_redemptions']) {
    for (let d = 1; d < 3; d++) {
      const name = partitionName(table, dayOf(now) + d * DAY);
      const [row] = await h.sql`select to_regclass(${name}) is not null as exists`;
      t.ok(row?.exists, `${name} made by the worker at start`);
    }
  }

  const lic = await h.createLicense({ totalQuota: 10 });
  const tokenId = newTokenId(now);
  const batch = [usedEvent(tokenId, lic.firmaId, now)];
  await persistEvents(h.sql, batch);
  await persistEvents(h.sql, batch); // a replay: the worker died before its acknowledgement
  const [once] = await h.sql`select count(*)::int as n, (select used_quota::int from licenses where firma_id = ${lic.firmaId}) as used
    from token_redemptions where token_id = ${tokenId}::uuid`;
  t.same(once, { n: 1, used: 1 }, 'one row, counted once');
  t.same([...(await partitionsOf(h, 'token_redemptions', [tokenId])).values()], ['token_redemptions_before'],
    'today\'s rows: in the partition of all up to the end of the day the tables were made');

  // a copy of the event with another time: the key is the token id, so it adds nothing,
  // across days and twice in one batch
  const copyId = newTokenId(now);
  await persistEvents(h.sql, [usedEvent(copyId, lic.firmaId, now), usedEvent(copyId, lic.firmaId, now + 5)]);
  await persistEvents(h.sql, [usedEvent(copyId, lic.firmaId, now - 20 * 3_600_000), usedEvent(tokenId, lic.firmaId, now + 20 * 3_600_000)]);
  const [copies] = await h.sql`select count(*)::int as n, (select used_quota::int from licenses where firma_id = ${lic.firmaId}) as used
    from token_redemptions where token_id in (${copyId}::uuid, ${tokenId}::uuid)`;
  t.same(copies, { n: 2, used: 2 }, 'one row a token, one unit a token, whatever the copies\' times');

  // a token issued past the days made (a clock far ahead) goes to DEFAULT, still counted once
  const ahead = dayOf(now) + 10 * DAY + 3_600_000;
  const aheadId = newTokenId(ahead);
  await persistEvents(h.sql, [usedEvent(aheadId, lic.firmaId, ahead)]);
  await persistEvents(h.sql, [usedEvent(aheadId, lic.firmaId, ahead)]);
  t.same([...(await partitionsOf(h, 'token_redemptions', [aheadId])).values()], ['token_redemptions_default']);
  const [twice] = await h.sql`select used_quota::int as used from licenses where firma_id = ${lic.firmaId}`;
  t.equal(twice?.used, 3, 'the replay of a DEFAULT row counts once too');
  const pass = await keepPartitions(h.sql, { daysAhead: 1, retentionDays: null }, ahead);
  t.same(pass.created, [partitionName('token_issues', dayOf(ahead)), partitionName('token_redemptions', dayOf(ahead))], 'its day made when its time comes');
  t.same([...(await partitionsOf(h, 'token_redemptions', [aheadId])).values()], [partitionName('token_redemptions', dayOf(ahead))], 'and the row moved into it');
  t.equal(pass.inDefault, 0);
  await persistEvents(h.sql, [usedEvent(aheadId, lic.firmaId, ahead)]);
  const [still] = await h.sql`select used_quota::int as used, (select count(*)::int from token_redemptions where token_id = ${aheadId}::uuid) as n
    from licenses where firma_id = ${lic.firmaId}`;
  t.same(still, { used: 3, n: 1 }, 'a replay after the move still counts once');

  // several workers keeping the days at once: one makes them, the others find them made
  const passes = await Promise.all([1, 2, 3].map(() => keepPartitions(h.sql, { daysAhead: 5, retentionDays: null })));
  t.equal(passes.flatMap((p) => p.created).length, 4, 'the two days not made yet, of both tables, made once');
});

t.test('two workers inserting one token at once, with other times: one row, counted once', async (t) => {
  const h = await startHarness(t, 'part-race', LIVE_COUNTS);
  const lic = await h.createLicense({ totalQuota: 10 });
  const now = Date.now();
  const other = postgres(DATABASE_URL, { onnotice: () => {}, max: 1, connection: { search_path: h.config.pgSchema } });
  t.teardown(() => other.end());

  // the first worker's batch inserted, not committed yet, when the second's comes
  const tokenId = newTokenId(now);
  let release = () => {};
  const held = new Promise<void>((resolve) => { release = resolve; });
  let inserted = () => {};
  const first = new Promise<void>((resolve) => { inserted = resolve; });
  const a = h.sql.begin(async (tx) => {
    await persistEvents(tx as never, [usedEvent(tokenId, lic.firmaId, now)]);
    inserted();
    await held;
  });
  await first;
  let settled = false;
  const b = persistEvents(other, [usedEvent(tokenId, lic.firmaId, now + 3_600_000)]).finally(() => { settled = true; });
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.notOk(settled, 'the second waits on the first\'s key');
  release();
  await a;
  t.same([...(await b).entries()], [], 'the second inserts nothing and counts nothing');
  const [row] = await h.sql`select count(*)::int as n, min(used_at) as used_at,
    (select used_quota::int from licenses where firma_id = ${lic.firmaId}) as used
    from token_redemptions where token_id = ${tokenId}::uuid`;
  t.same([row?.n, row?.used, (row?.used_at as Date).getTime()], [1, 1, now], 'one row (the first\'s), counted once');

  // and many at once, each with its own time, from two connections
  const raceId = newTokenId(now);
  await Promise.all(Array.from({ length: 8 }, (_, i) =>
    persistEvents(i % 2 === 0 ? h.sql : other, [usedEvent(raceId, lic.firmaId, now + i * 60_000)])));
  const [many] = await h.sql`select count(*)::int as n, (select used_quota::int from licenses where firma_id = ${lic.firmaId}) as used
    from token_redemptions where token_id = ${raceId}::uuid`;
  t.same(many, { n: 1, used: 2 }, 'one row, one unit');
});

t.test('RETENTION_DAYS drops whole old days of the usage tables, and only them', async (t) => {
  const h = await startHarness(t, 'part-retention', LIVE_COUNTS);
  const lic = await h.createLicense({ totalQuota: 50 });

  // old days, by hand, in place of the partition of what was before the migration (empty yet)
  const now = Date.now();
  const old = dayOf(now) - 10 * DAY;
  const recent = dayOf(now) - 3 * DAY;
  await h.sql.begin(async (tx) => {
    for (const table of ['token_issues', 'token_redemptions']) {
      await tx.unsafe(`alter table ${table} detach partition ${table}_before`);
      await tx.unsafe(`drop table ${table}_before`);
      for (const day of [old, recent]) {
        await tx.unsafe(`create table ${partitionName(table, day)} partition of ${table}
          for values from ('${uuidBound(day)}') to ('${uuidBound(day + DAY)}')`);
      }
    }
    for (const day of [old, recent]) {
      const id = newTokenId(day + 3_599_000);
      await tx`insert into token_issues (token_id, firma_id, imza_tipi, issued_at) values (${id}, ${lic.firmaId}, 0, ${new Date(day + 3_600_000)})`;
      await tx`insert into token_redemptions (token_id, firma_id, imza_tipi, used_at) values (${id}::uuid, ${lic.firmaId}, 0, ${new Date(day + 3_601_000)})`;
    }
  });
  t.same((await keepPartitions(h.sql, { daysAhead: 3, retentionDays: null })).created,
    [partitionName('token_issues', dayOf(now)), partitionName('token_redemptions', dayOf(now))], 'today, no longer covered, made');
  const { tokens } = await mintTokens(h, lic, 1, 0);
  t.equal((await h.validate(tokens[0] as string)).status, 200);
  await h.drainWorker();
  await h.admin('POST', `/admin/v1/licenses/${lic.licenseKey}/quota`, { add: 5 });
  const usedBefore = (await adminView(h, lic.licenseKey)).usedQuota;
  t.equal((await historyOf(h, lic)).length, 3, 'history: today\'s, three days ago\'s, ten days ago\'s');
  const others = async () => h.sql`select (select count(*) from licenses)::int as licenses, (select count(*) from quota_purchases)::int as purchases,
    (select total_quota::int from licenses where firma_id = ${lic.firmaId}) as total`;
  const othersBefore = await others();

  // a second instance on the same storage, with RETENTION_DAYS: its worker's first pass drops
  const second = await startHarness(t, 'part-retention-2', { REDIS_PREFIX: h.prefix, PG_SCHEMA: h.config.pgSchema, RETENTION_DAYS: '5' }, { logLevel: 'info' });
  const dropped = second.logs.find((r) => r.msg === 'usage partitions dropped (RETENTION_DAYS)');
  t.same(dropped?.dropped, [partitionName('token_issues', old), partitionName('token_redemptions', old)], 'the days ten days old, of both tables, logged');
  const left = await h.sql`select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent in ('token_issues'::regclass, 'token_redemptions'::regclass) order by 1`;
  const names = left.map((r) => r.relname as string);
  t.notOk(names.includes(partitionName('token_redemptions', old)), 'the old day is gone');
  t.ok(names.includes(partitionName('token_redemptions', recent)), 'three days ago is kept');
  t.ok(names.includes('token_redemptions_default') && names.includes('token_issues_default'), 'the DEFAULT partitions are never dropped');
  const history = await historyOf(h, lic);
  t.equal(history.length, 2, 'history answers without the dropped day');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, usedBefore, 'the used quota is the license\'s, not a count of rows: unchanged');
  t.same(await others(), othersBefore, 'licenses and purchases untouched');
  const metrics = await second.request('GET', '/metrics');
  if (metrics.status === 200) t.match(metrics.text, /license_usage_partitions_dropped_total(\{[^}]*\})? 2/, 'drops counted');
});

t.test('RETENTION_DAYS must be a whole number of days, at least one', async (t) => {
  for (const bad of ['0', '-1', '1.5', 'ten', '36501']) {
    t.throws(() => loadConfig(testEnv('part-config', { RETENTION_DAYS: bad })), { message: /^RETENTION_DAYS must be (a whole number|between 1 and 36500)/ }, `RETENTION_DAYS=${bad} refused`);
  }
  t.equal(loadConfig(testEnv('part-config', { RETENTION_DAYS: '30' })).retentionDays, 30);
  t.equal(loadConfig(testEnv('part-config')).retentionDays, null, 'unset: everything kept');
});
