import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { newTokenId } from '../src/tokens/tokenId.js';
import { postgresCpu } from './load/proc.js';

// Postgres CPU (every postgres process of the machine) and WAL per redemption row, for ways
// of laying out the redemptions table, each written as the usage worker writes a batch:
// one statement, the events one a line, split by Postgres (src/usage/persist.ts), and the
// licenses' used counts raised by the rows inserted; then a VACUUM of the table, the
// clean-up each layout leaves for autovacuum. Rounds alternate the variants.
// Run: node dist/bench/postgres.js (BENCH_DATABASE_URL, PG_BENCH_BATCH, PG_BENCH_BATCHES, PG_BENCH_ROUNDS, PG_BENCH_LICENSES).
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = Number(process.env.PG_BENCH_BATCH ?? 500);
const BATCHES = Number(process.env.PG_BENCH_BATCHES ?? 200);
const ROUNDS = Number(process.env.PG_BENCH_ROUNDS ?? 3);
const LICENSES = Number(process.env.PG_BENCH_LICENSES ?? 32);
const SCHEMA = 'benchpg';

interface Variant {
  name: string;
  table: string;
  /** the token id as the insert casts it */
  cast: string;
  id: () => string;
  /** no unique token id: nothing to conflict on */
  plain?: boolean;
  /** the layout before: one row per token, issued first (not measured), the redemption updating it */
  update?: boolean;
  /** a statement of its own, for layouts that are no row per redemption (given the lines' split) */
  statement?: (lines: string) => string;
}

const columns = (tokenType: string, key: string) => `token_id ${tokenType} ${key}, firma_id text not null, imza_tipi smallint not null,
  used_at timestamptz not null, issued_at timestamptz, origin text`;
const PACKED = '(firma_id text not null, first_used timestamptz not null, n int not null, lines text not null); create index on r (firma_id, first_used desc)';
const GUARD = 'insert into g select split_part(e, E\'\\t\', 1)::uuid from unnest(string_to_array($1::text, E\'\\n\')) as e';
const packedStatement = (lines: string, guard: string) => `with ${guard ? `g as (${guard}), ` : ''}used as (
    insert into r select v[2], timestamptz 'epoch' + min(v[4]::int8) * interval '1 millisecond', count(*), string_agg(e, E'\\n')
    from (select e, string_to_array(e, E'\\t') as v from ${lines}) as u group by v[2]
    returning firma_id, n)
  update licenses l set used_quota = l.used_quota + n.n, updated_at = now() from used n where l.firma_id = n.firma_id`;
const variants: Variant[] = [
  { name: 'before: the issued row updated to used (sql/001: text id, primary key + partial history index)', cast: '', id: randomUUID, update: true,
    table: `(token_id text primary key, firma_id text not null, imza_tipi smallint not null, status text not null check (status in ('issued', 'used')),
      issued_at timestamptz, expires_at timestamptz, used_at timestamptz, origin text);
      create index on r (firma_id, used_at desc, token_id desc) where status = 'used'` },
  { name: 'heap only (no index: the floor)', table: `(${columns('text', 'not null')})`, cast: '', id: randomUUID, plain: true },
  { name: 'text id, primary key + history (firma, used_at, token)', cast: '',
    table: `(${columns('text', 'primary key')}); create index on r (firma_id, used_at desc, token_id desc)`, id: randomUUID },
  { name: 'uuid id (v4), primary key + history (firma, used_at, token)', cast: '::uuid',
    table: `(${columns('uuid', 'primary key')}); create index on r (firma_id, used_at desc, token_id desc)`, id: randomUUID },
  { name: 'uuid id (v4), primary key + history (firma, used_at)', cast: '::uuid',
    table: `(${columns('uuid', 'primary key')}); create index on r (firma_id, used_at desc)`, id: randomUUID },
  { name: 'uuid id (v7), primary key + history (firma, used_at): kept', cast: '::uuid',
    table: `(${columns('uuid', 'primary key')}); create index on r (firma_id, used_at desc)`, id: () => newTokenId() },
  { name: 'uuid id (v7), primary key alone (no history index)', cast: '::uuid', table: `(${columns('uuid', 'primary key')})`, id: () => newTokenId() },
  // what a history without an index entry per redemption could be: one row per license and
  // batch holding the batch's lines, found by the license and its first redemption's time
  { name: 'a row per license and batch (its lines as text), no key per token', cast: '', id: () => newTokenId(),
    table: `${PACKED}; create table g (token_id uuid)`, statement: (lines) => packedStatement(lines, '') },
  { name: 'the same, with a key per token (a table of the token ids alone)', cast: '', id: () => newTokenId(),
    table: `${PACKED}; create table g (token_id uuid primary key)`, statement: (lines) => packedStatement(lines, GUARD) },
  { name: 'the key per token alone (the ids and the licenses\' counts, nothing else kept)', cast: '', id: () => newTokenId(),
    table: '(x int); create table g (token_id uuid primary key)', statement: (lines) => `with g as (${GUARD})
      update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
      from (select split_part(e, E'\\t', 2) as firma_id, count(*) as count from ${lines} group by 1) n where l.firma_id = n.firma_id` },
];

const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { search_path: SCHEMA } });
await sql.unsafe(`drop schema if exists ${SCHEMA} cascade; create schema ${SCHEMA}`);
const firmas = Array.from({ length: LICENSES }, (_, i) => `firma-${i}-bench`);
await sql.unsafe('create table licenses (firma_id text primary key, used_quota bigint not null default 0, updated_at timestamptz) with (fillfactor = 50)');
await sql.unsafe('insert into licenses (firma_id) select unnest($1::text[])', [firmas as never]);

function statement(v: Variant): string {
  if (v.statement) return v.statement(`unnest(string_to_array($1::text, E'\\n')) as e`);
  if (v.update) {
    return `with used as (
      insert into r as st (token_id, firma_id, imza_tipi, status, issued_at, used_at, origin)
      select v[1], v[2], v[3]::int2, 'used', timestamptz 'epoch' + nullif(v[5], '')::int8 * interval '1 millisecond',
             timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond', v[6]
      from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($1::text, E'\\n')) as e) as u
      on conflict (token_id) do update set status = 'used', used_at = excluded.used_at, origin = excluded.origin
        where st.status <> 'used'
      returning st.firma_id)
    update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
    from (select firma_id, count(*) as count from used group by firma_id) n where l.firma_id = n.firma_id`;
  }
  return `with used as (
      insert into r (token_id, firma_id, imza_tipi, used_at, issued_at, origin)
      select v[1]${v.cast}, v[2], v[3]::int2, timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond',
             timestamptz 'epoch' + nullif(v[5], '')::int8 * interval '1 millisecond', v[6]
      from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($1::text, E'\\n')) as e) as u
      ${v.plain ? '' : 'on conflict (token_id) do nothing'}
      returning firma_id)
    update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
    from (select firma_id, count(*) as count from used group by firma_id) n where l.firma_id = n.firma_id`;
}

/** A batch of redemptions; for the update layout, of tokens issued beforehand (issued(v) gave out their ids). */
function batch(v: Variant, ids?: string[]): string {
  const now = Date.now();
  const lines: string[] = [];
  for (let i = 0; i < BATCH; i++) lines.push([ids?.pop() ?? v.id(), firmas[i % firmas.length], 0, now, now - 1000, 'https://imza.ornek.com.tr'].join('\t'));
  return lines.join('\n');
}

/** For the update layout: n tokens issued (rows inserted as issued), their ids. */
async function issued(v: Variant, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => v.id());
  for (let i = 0; i < n; i += 10_000) {
    await sql.unsafe(`insert into r (token_id, firma_id, imza_tipi, status, issued_at, expires_at)
      select t, 'firma-0-bench', 0, 'issued', now(), now() + interval '5 minutes' from unnest($1::text[]) as t`, [ids.slice(i, i + 10_000) as never]);
  }
  return ids;
}

const walBytes = async () => Number((await sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as n`)[0]?.n);

/** [µs, WAL bytes] per row of BATCHES batches into a fresh table */
async function measure(v: Variant): Promise<[number, number]> {
  await sql.unsafe(`drop table if exists r, g; create table r ${v.table}`);
  const text = statement(v);
  const ids = v.update ? await issued(v, BATCH * (BATCHES + 20)) : undefined;
  for (let i = 0; i < 20; i++) await sql.unsafe(text, [batch(v, ids)], { prepare: true });
  await sql.unsafe(v.statement ? 'vacuum analyze r, g' : 'vacuum analyze r');
  await sql.unsafe('checkpoint');
  const cpu0 = postgresCpu();
  const wal0 = await walBytes();
  for (let i = 0; i < BATCHES; i++) await sql.unsafe(text, [batch(v, ids)], { prepare: true });
  // and the vacuum that cleans up after them (dead rows of the update layout; visibility of the others)
  await sql.unsafe(v.statement ? 'vacuum r, g' : 'vacuum r');
  const rows = BATCH * BATCHES;
  return [(postgresCpu() - cpu0) / rows, ((await walBytes()) - wal0) / rows];
}

const results = variants.map(() => ({ us: [] as number[], wal: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < variants.length; i++) {
    const [us, wal] = await measure(variants[i] as Variant);
    results[i]?.us.push(us);
    results[i]?.wal.push(wal);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
process.stdout.write(`Postgres per redemption row, ${LICENSES} licenses, batches of ${BATCH}, ${BATCHES} batches per run, medians of ${ROUNDS} rounds\n\n`);
process.stdout.write('| table layout | Postgres CPU µs/row | WAL bytes/row |\n|---|---|---|\n');
variants.forEach((v, i) => {
  const r = results[i] as { us: number[]; wal: number[] };
  process.stdout.write(`| ${v.name} | ${median(r.us).toFixed(2)} | ${median(r.wal).toFixed(0)} |\n`);
});
await sql.unsafe(`drop schema ${SCHEMA} cascade`);
await sql.end();
