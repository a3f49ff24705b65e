import type { Sql } from '../db/pg.js';
import { microsOf } from './keyset.js';

// A license's ledger (sql/010_packages_ledger.sql) as GET /admin/v1/licenses/{key}/ledger and
// the holder's view read it: the entries (purchase, forfeit, release, correction) and, for
// spending, one line per UTC day of redemptions, merged newest first; and the totals, which
// sum to the license's figures.

export type LedgerKind = 'purchase' | 'forfeit' | 'release' | 'correction' | 'spend';

/** One line of the ledger: an entry, or a day's redemptions (kind spend: no balance, package or actor). */
export interface LedgerLine {
  kind: LedgerKind;
  /** an entry's time; a day's: the end of that UTC day, or the time of the answer for the current day */
  at: Date;
  /** what it adds to the balance: a forfeit and a day's spending are negative */
  amount: number;
  balanceAfter: number | null;
  packageNo: number | null;
  actor: string | null;
  note: string | null;
  /** a day's spending: the day, YYYY-MM-DD (UTC); null for an entry */
  day: string | null;
  /** the line's place in the order (for the next page's cursor): its time in microseconds and its reference */
  atMicros: string;
  ref: string;
}

/** What the ledger sums to, as Postgres holds it in one snapshot: the license's total and used quota. */
export interface LedgerTotals {
  purchased: number;
  corrected: number;
  forfeited: number;
  released: number;
  redeemed: number;
  totalQuota: number;
  usedQuota: number;
}

/** Where a page ends: the last line's time (µs) and reference (an entry's "e" and id, a day's "s" and date). */
export interface LedgerCursor {
  atMicros: string;
  ref: string;
}

const ENTRIES = `
  select kind, at, amount::float8 as amount, balance_after::float8 as balance_after, package_no, actor, note, null::text as day,
         'e' || lpad(id::text, 19, '0') as ref
  from license_ledger where firma_id = $1`;

/**
 * A day's line is its running total, dated at the end of its day, after every entry of the
 * day; the current day's, not over yet, at the time of the answer ("the day so far"): never
 * a time to come, and still the newest line, so a cursor's pages neither repeat nor skip it
 * while the day's count grows. A time per redemption would need the worker to keep each
 * day's latest redemption, a write per batch for a date that only orders these lines.
 */
const SPENDING = `
  select 'spend', least((day + 1)::timestamp at time zone 'UTC' - interval '1 microsecond', statement_timestamp()), -redeemed::float8, null, null, null, null,
         day::text, 's' || day::text
  from license_daily_usage where firma_id = $1 and redeemed > 0`;

/** Which lines a page holds: every line, or the entries alone (no day's spending: the holder's view, which has history for that). */
export type LedgerLines = 'all' | 'entries';

export class Ledger {
  constructor(private readonly sql: Sql) {}

  /** At most `limit` lines, newest first, after `after` (null: from the newest). */
  async lines(firmaId: string, limit: number, after: LedgerCursor | null, which: LedgerLines = 'all'): Promise<LedgerLine[]> {
    const params: unknown[] = [firmaId, limit];
    const where = after === null ? '' : `where (at_micros, ref) < ($${params.push(after.atMicros)}::int8, $${params.push(after.ref)})`;
    const source = which === 'all' ? `${ENTRIES}\n  union all${SPENDING}` : ENTRIES;
    const rows = await this.sql.unsafe(
      `select * from (select l.*, ${microsOf('at')} as at_micros from (${source}) l) lines
       ${where} order by at_micros desc, ref desc limit $2`,
      params as never[],
    );
    return rows.map((r) => ({
      kind: r.kind as LedgerKind,
      at: r.at as Date,
      amount: r.amount as number,
      balanceAfter: (r.balance_after as number | null) ?? null,
      packageNo: (r.package_no as number | null) ?? null,
      actor: (r.actor as string | null) ?? null,
      note: (r.note as string | null) ?? null,
      day: (r.day as string | null) ?? null,
      atMicros: String(r.at_micros),
      ref: r.ref as string,
    }));
  }

  /** The sums of a license's ledger beside its figures, read together; null: no such license. */
  async totals(firmaId: string): Promise<LedgerTotals | null> {
    const rows = await this.sql`
      select l.total_quota::float8 as total_quota, l.used_quota::float8 as used_quota,
        coalesce((select sum(amount) filter (where kind = 'purchase') from license_ledger where firma_id = l.firma_id), 0)::float8 as purchased,
        coalesce((select sum(amount) filter (where kind = 'correction') from license_ledger where firma_id = l.firma_id), 0)::float8 as corrected,
        coalesce((select -sum(amount) filter (where kind = 'forfeit') from license_ledger where firma_id = l.firma_id), 0)::float8 as forfeited,
        coalesce((select sum(amount) filter (where kind = 'release') from license_ledger where firma_id = l.firma_id), 0)::float8 as released,
        coalesce((select sum(redeemed) from license_daily_usage where firma_id = l.firma_id), 0)::float8 as redeemed
      from licenses l where l.firma_id = ${firmaId}`;
    const r = rows[0];
    if (!r) return null;
    return {
      purchased: r.purchased as number, corrected: r.corrected as number, forfeited: r.forfeited as number, released: r.released as number,
      redeemed: r.redeemed as number, totalQuota: r.total_quota as number, usedQuota: r.used_quota as number,
    };
  }
}
