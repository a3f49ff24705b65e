import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/pg.js';

// The days of the usage tables (sql/009_partitioned_usage.sql): each table is partitioned by
// range of token_id, its key, one partition a UTC day of the tokens' issue (token ids are UUIDs
// of version 7, whose first 48 bits are the issue time in ms), made a few days ahead, and a
// DEFAULT partition for rows no day holds (ids of a day not made, older ids that are no v7
// UUID). The usage worker keeps them (src/usage/partitionKeeper.ts): it makes the coming days
// and, under RETENTION_DAYS, drops the days entirely older than that. Whole partitions only: a
// DROP frees a day at once and writes no WAL per row, where DELETEs would leave vacuum as much
// again to do. Nothing but the partitions of these two tables is ever dropped.

/** The partitioned usage tables, both by token_id. */
export const USAGE_TABLES = ['token_issues', 'token_redemptions'] as const;

const DAY_MS = 86_400_000;

/**
 * How long a pass waits for a table lock: making or dropping a partition locks its table
 * briefly, behind the worker's batch in flight; one that waits longer is tried on the next pass
 * rather than holding up the batches queued behind it.
 */
const LOCK_TIMEOUT = '5s';

export interface PartitionPolicy {
  /** days made ahead, today being the first */
  daysAhead: number;
  /** RETENTION_DAYS: partitions entirely older than this many days are dropped; null: all are kept */
  retentionDays: number | null;
}

export interface PartitionPass {
  /** partitions made, by name */
  created: string[];
  /** partitions dropped, by name */
  dropped: string[];
  /** rows of v7 ids that sit in a DEFAULT partition (at most 1000 a table are counted) */
  inDefault: number;
}

/** The UTC day a time falls in, at midnight. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** The name of a table's partition of the UTC day starting at dayMs: token_redemptions_p20261126. */
export function partitionName(table: string, dayMs: number): string {
  return `${table}_p${new Date(dayMs).toISOString().slice(0, 10).replace(/-/g, '')}`;
}

/**
 * The smallest UUIDv7 of a millisecond: the ms as 12 hex digits, then zeros
 * (019ac000-0000-0000-0000-000000000000). Every id of that ms and later sorts after it, every
 * earlier one before (uuids compare bytewise; the text ids of token_issues in the "C"
 * collation, the same order).
 */
export function uuidBound(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The ms of a bound as Postgres prints it (a quoted uuid, MINVALUE, MAXVALUE). */
function boundMs(bound: string): number {
  if (bound === 'MINVALUE') return -Infinity;
  if (bound === 'MAXVALUE') return Infinity;
  const hex = bound.replace(/^'|'$/g, '').replace(/-/g, '').slice(0, 12);
  if (!/^[0-9a-f]{12}$/i.test(hex)) throw new Error(`usage partitions: unexpected bound ${bound}`);
  return parseInt(hex, 16);
}

const literal = (ms: number) => `'${uuidBound(ms)}'`;
/** A name read from the catalog, as an identifier (whoever named it). */
const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * One pass over both tables, under an advisory lock (several workers, of one machine or
 * many, may run it at once: the second finds the days made). Idempotent. The days are made
 * in one transaction and the old ones dropped in another, so a drop that cannot be done
 * (a lock not had in time) never keeps the coming days from being made.
 */
export async function keepPartitions(sql: Sql, policy: PartitionPolicy, nowMs = Date.now()): Promise<PartitionPass> {
  const pass: PartitionPass = { created: [], dropped: [], inDefault: 0 };
  await underLock(sql, async (tx) => {
    for (const table of USAGE_TABLES) {
      const ranges = await rangesOf(tx, table);
      for (let d = 0; d < policy.daysAhead; d++) {
        const from = dayOf(nowMs) + d * DAY_MS;
        const name = partitionName(table, from);
        if (await createDay(tx, table, ranges, name, from, from + DAY_MS)) pass.created.push(name);
      }
      // the older ids that are no v7 UUID belong there: only v7 ids are counted
      const [row] = await tx.unsafe(
        `select count(*)::int as n from (select 1 from ${table}_default where substr(token_id::text, 15, 1) = '7' limit 1000) r`);
      pass.inDefault += (row?.n as number | undefined) ?? 0;
    }
  });
  const { retentionDays } = policy;
  if (retentionDays !== null) {
    await underLock(sql, async (tx) => {
      for (const table of USAGE_TABLES) pass.dropped.push(...await dropBefore(tx, table, nowMs - retentionDays * DAY_MS));
    });
  }
  return pass;
}

async function underLock(sql: Sql, work: (tx: TransactionSql) => Promise<void>): Promise<void> {
  await sql.begin(async (tx) => {
    await tx.unsafe(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    await tx.unsafe(`select pg_advisory_xact_lock(hashtext('usage-partitions:' || current_schema()))`);
    await work(tx);
  });
}

interface Range { name: string; from: number; to: number }

/**
 * The partitions of a table with a range (not DEFAULT), their bounds as ms: read from the
 * catalog, so the partition of what was before the migration is one of them.
 */
async function rangesOf(tx: TransactionSql, table: string): Promise<Range[]> {
  const rows = await tx.unsafe(
    `select c.relname as name, b[1] as "from", b[2] as "to"
     from pg_inherits i join pg_class c on c.oid = i.inhrelid,
       regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\((.+)\\) TO \\((.+)\\)') as b
     where i.inhparent = $1::regclass and b is not null
     order by 1`,
    [table],
  );
  return rows.map((r) => ({ name: r.name as string, from: boundMs(r.from as string), to: boundMs(r.to as string) }));
}

/**
 * Makes a day's partition unless it exists or another partition covers part of it (the
 * partition of what was before the migration covers the migration's day). Rows of that day
 * already in the DEFAULT partition (a day made late) move into it: a partition cannot be
 * attached over rows the DEFAULT holds in its range; they are found by the key's index. Made
 * as a table of its own, filled, then attached, which locks the parent less than CREATE ...
 * PARTITION OF does.
 */
async function createDay(tx: TransactionSql, table: string, ranges: Range[], name: string, from: number, to: number): Promise<boolean> {
  const [found] = await tx.unsafe(`select to_regclass($1) is not null as exists`, [name]);
  if (found?.exists || ranges.some((r) => r.from < to && r.to > from)) return false;
  const range = `token_id >= ${literal(from)} and token_id < ${literal(to)}`;
  await tx.unsafe(`create table ${name} (like ${table} including defaults including constraints)`);
  await tx.unsafe(`with moved as (delete from ${table}_default where ${range} returning *) insert into ${name} select * from moved`);
  await tx.unsafe(`alter table ${table} attach partition ${name} for values from (${literal(from)}) to (${literal(to)})`);
  return true;
}

/**
 * Drops the partitions of a table whose whole range ends at or before cutoffMs, by the issue
 * day their ids' bounds say (never the DEFAULT partition, which has no range), so the
 * partition of everything before the migration goes too once its end is old enough.
 */
async function dropBefore(tx: TransactionSql, table: string, cutoffMs: number): Promise<string[]> {
  const names = (await rangesOf(tx, table)).filter((r) => r.to <= cutoffMs).map((r) => r.name);
  for (const name of names) await tx.unsafe(`drop table ${quoted(name)}`);
  return names;
}
