import type { Sql } from '../db/pg.js';
import { EVENT_SEPARATOR } from '../redis/fields.js';
import type { UsageEvent } from './events.js';

/** A license's counts in Postgres after a write: used_quota + released_quota (redemptions ever counted), and released_quota. */
export interface Counted {
  counted: number;
  released: number;
}

/** firma id -> its counts after a write, for the licenses it changed */
export type UsedCounts = Map<string, Counted>;

/**
 * One batch, one statement. The events travel as text parameters, one per kind, one event a
 * line (its values tab-separated, as the stream holds them: src/usage/events.ts), and Postgres
 * splits them: no array of values to build and escape per column on this side.
 *
 * Both tables only ever gain rows, and replays change nothing: an issued token is inserted
 * once, a redemption is inserted once (on conflict do nothing), and the license's used
 * quota rises by the redemption rows actually inserted. A token issued and redeemed within
 * one batch is a row in each table. Empty numbers (events of earlier versions that lacked
 * them) are nulls. Answers the used quota of every license the batch changed.
 *
 * The token id is the key of both tables, partitioned by it (by the token's issue day:
 * sql/009_partitioned_usage.sql), so a token is one row whatever its events' times, and two
 * workers inserting one token at once wait on each other's key: one inserts, the other adds
 * nothing, and the quota rises once.
 *
 * A sign's redemption travels in $4 instead, its line led by its receipt's document count
 * and digest, which its row adds; a validate's row has neither (and a batch of validates
 * alone joins nothing).
 *
 * Kontör (sql/010_packages_ledger.sql): each redemption written is a spend of the package it
 * names (the first field of its line in $2) and of the license's day. The license's row counts
 * its latest day and its open package, when a batch spent one day and one package of it
 * (sql/014_open_usage_day.sql, sql/015_open_package.sql; the views license_daily_usage and
 * license_packages show the sums). An earlier day, and a day or package the row moved on
 * from, are written to license_usage_days and license_package_rows; so are the spends of a
 * batch that spent several days or packages of one license. A forfeit ($5: firma id, package number, units,
 * time) is a ledger entry, unique per package, so a replayed one inserts nothing; those
 * inserted take their units off the license's total and mark them forfeited on the package.
 * Each package and license row is updated once per statement (Postgres applies only one
 * update of a row per statement), with the moves of the batch summed. A release ($6: token
 * id, firma id, package, time, reason) is a row of token_releases, unique per token: those
 * inserted are ledger entries and give their unit back to the package and the license's
 * used count.
 *
 * The same statement writes the webhook events the batch causes (docs/api.md#webhooks): for a
 * license with a webhook URL whose remaining quota this batch took from above a threshold
 * to at or below it (quota.low: $3 % of the total; quota.exhausted: 0), one outbox row,
 * keyed by the license's total, so a crossing is recorded once however often its events
 * are replayed (sql/005_webhooks.sql). The remaining quota before the batch is the one
 * after it plus the redemptions it inserted and the units it forfeited: every rise of used_quota is one of these
 * statements, and those of one license run one after another on its row lock.
 */
const STATEMENT = `
  with issued as (
    insert into token_issues (token_id, firma_id, imza_tipi, issued_at, expires_at)
    select v[1], v[2], v[3]::int2, timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond',
           timestamptz 'epoch' + nullif(v[5], '')::int8 * interval '1 millisecond'
    from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($1::text, E'\\n')) as e) as i
    on conflict (token_id) do nothing
  ), used as (
    -- a line: the package the redemption spent ("" in events of earlier versions), then its values;
    -- a redemption that names none spent the license's first package with units left, as Redis then did
    insert into token_redemptions (token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256, package_no)
    select v[2]::uuid, v[3], v[4]::int2, timestamptz 'epoch' + v[5]::int8 * interval '1 millisecond',
           timestamptz 'epoch' + nullif(v[6], '')::int8 * interval '1 millisecond', v[7], documents::int2, receipt_sha256,
           coalesce(nullif(v[1], '')::int, (select min(p.package_no) from license_packages p
                                            where p.firma_id = v[3] and p.used + p.forfeited < p.amount))
    from (select string_to_array(e, E'\\t') as v, null as documents, null as receipt_sha256
          from unnest(string_to_array($2::text, E'\\n')) as e
          union all
          select r[3:], r[1], r[2] from (select string_to_array(e, E'\\t') as r from unnest(string_to_array($4::text, E'\\n')) as e) as s) as u
    on conflict (token_id) do nothing
    returning token_id, firma_id, used_at, package_no
  ), spent as (
    select firma_id, used_at, (used_at at time zone 'UTC')::date as day, package_no from used
  ), released as (
    -- a token is released once: its row decides, whatever the replays
    insert into token_releases (token_id, firma_id, package_no, released_at, reason)
    select v[1]::uuid, v[2], v[3]::int, timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond', nullif(v[5], '')
    from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($6::text, E'\\n')) as e) as x
    on conflict (token_id) do nothing
    returning firma_id, package_no, released_at, reason
  ), locked as (
    -- the licenses whose ledger entries this batch writes, locked first (in one order) and read
    -- as they are when locked: a statement's snapshot predates a purchase or another batch
    -- that committed while it waited, which the row it then updates includes; the balances
    -- must count them too. A batch with no forfeit or release locks nothing here.
    select firma_id, total_quota - used_quota as balance from licenses
    where ($5::text <> '' or $6::text <> '') and firma_id in (select split_part(e, E'\\t', 1) from unnest(string_to_array($5::text, E'\\n')) as e
                       union all select split_part(e, E'\\t', 2) from unnest(string_to_array($6::text, E'\\n')) as e)
    order by firma_id
    for no key update
  ), forfeits as (
    -- a package forfeits once: the ledger's unique entry decides, whatever the replays. Its
    -- balance after is the license's row before this statement (as locked), less the batch's redemptions
    -- before it (one at its millisecond is the redemption that found the package expired),
    -- plus the batch's releases until it, less this batch's forfeits of the license until it
    insert into license_ledger (firma_id, at, kind, amount, balance_after, package_no, actor)
    select f.firma_id, f.at, 'forfeit', -f.units,
           coalesce((select k.balance from locked k where k.firma_id = f.firma_id), 0)
             - (select count(*) from spent s where s.firma_id = f.firma_id and s.used_at < f.at)
             + (select count(*) from released r where r.firma_id = f.firma_id and r.released_at <= f.at)
             - sum(f.units) over (partition by f.firma_id order by f.at, f.package_no),
           f.package_no, 'system'
    from (select distinct on (v[1], v[2]) v[1] as firma_id, timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond' as at,
                 v[2]::int as package_no, v[3]::int8 as units
          from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($5::text, E'\\n')) as e) as x) as f
    -- replays left out before the running sum (their units were taken when first written)
    where not exists (select from license_ledger l where l.kind = 'forfeit' and l.firma_id = f.firma_id and l.package_no = f.package_no)
    on conflict (firma_id, package_no) where kind = 'forfeit' do nothing
    returning firma_id, package_no, -amount as units, at
  ), release_entries as (
    -- balance after: as a forfeit's, with the batch's redemptions until the release (its own
    -- redemption may be in the batch), its forfeits until it and its releases until this one
    insert into license_ledger (firma_id, at, kind, amount, balance_after, package_no, actor, note)
    select r.firma_id, r.released_at, 'release', 1,
           coalesce((select k.balance from locked k where k.firma_id = r.firma_id), 0)
             - (select count(*) from spent s where s.firma_id = r.firma_id and s.used_at <= r.released_at)
             - coalesce((select sum(f.units) from forfeits f where f.firma_id = r.firma_id and f.at <= r.released_at), 0)
             + row_number() over (partition by r.firma_id order by r.released_at, r.package_no),
           r.package_no, 'holder', r.reason
    from released r
  ), moves as (
    -- per license: the batch's redemptions, forfeits and releases, and the UTC days and
    -- packages its redemptions spent (one of each, first = last, nearly always)
    select firma_id, sum(spent)::int8 as spent, sum(forfeited)::int8 as forfeited, sum(released)::int8 as released,
           min(day) as first_day, max(day) as last_day, count(day)::int8 as day_spent,
           min(package_no) as first_package, max(package_no) as last_package, count(package_no)::int8 as package_spent
    from (select firma_id, 1 as spent, 0 as forfeited, 0 as released, day, package_no from spent
          union all select firma_id, 0, units, 0, null, null from forfeits
          union all select firma_id, -1, 0, 1, null, null from released) as x
    group by 1
  ), counted as (
    -- A batch that spent one day counts it on the row: added to the open day, or moving the
    -- open day on when later (the day it held closed, returned in closed_day), or, when
    -- earlier, to license_usage_days (late). A batch that spent one package counts it on the
    -- row the same way: added to the open package, or opening it and closing the one before
    -- (returned in closed_package_no: its count goes to its row). Several of either go to
    -- their tables. Evaluated on the row as it is when locked, so concurrent batches of one
    -- license add up.
    update licenses l set used_quota = l.used_quota + n.spent, total_quota = l.total_quota - n.forfeited,
                          forfeited_quota = l.forfeited_quota + n.forfeited, released_quota = l.released_quota + n.released,
                          usage_day = case when n.day is null or n.day < l.usage_day then l.usage_day else n.day end,
                          usage_day_redeemed = case when n.day is null or n.day < l.usage_day then l.usage_day_redeemed
                                                    when n.day = l.usage_day then l.usage_day_redeemed + n.day_spent else n.day_spent end,
                          closed_day = case when n.day > l.usage_day then l.usage_day end,
                          closed_day_redeemed = case when n.day > l.usage_day then l.usage_day_redeemed else 0 end,
                          open_package_no = case when n.first_package = n.last_package then n.first_package else l.open_package_no end,
                          open_package_used = case when n.first_package = n.last_package and n.first_package = l.open_package_no
                                                     then l.open_package_used + n.package_spent
                                                   when n.first_package = n.last_package then n.package_spent
                                                   else l.open_package_used end,
                          closed_package_no = case when n.first_package = n.last_package and n.first_package is distinct from l.open_package_no
                                                     then l.open_package_no end,
                          closed_package_used = case when n.first_package = n.last_package and n.first_package is distinct from l.open_package_no
                                                       then l.open_package_used else 0 end,
                          updated_at = now()
    -- held: the locks of locked taken and its balances read before any row here is updated
    -- (release_entries, which reads them too, runs after this update)
    from (select *, case when first_day = last_day then last_day end as day from moves) n, (select count(*) from locked) as held
    where l.firma_id = n.firma_id
    returning l.firma_id, l.license_key, l.organization_name, l.total_quota, l.used_quota, l.released_quota, l.expiry_date, l.webhook_url,
              greatest(l.total_quota - l.used_quota, 0) as remaining,
              -- as the license was before this batch (spent counts a release as -1)
              greatest(l.total_quota - l.used_quota + n.spent + n.forfeited, 0) as remaining_before,
              l.total_quota + n.forfeited as total_before, l.packages_made,
              -- closed_day and closed_package_no are set by this update alone (null otherwise)
              l.closed_day, l.closed_day_redeemed, n.day is not null and n.day < l.usage_day as late, n.day, n.day_spent,
              l.closed_package_no, l.closed_package_used
  ), packaged as (
    -- the package rows: the package a license's row closed, the redemptions of a license whose
    -- batch spent more than one package, forfeits and releases
    update license_package_rows p set used = p.used + m.spent, forfeited = p.forfeited + m.forfeited
    from (select firma_id, package_no, sum(spent)::int8 as spent, sum(forfeited)::int8 as forfeited from (
            select firma_id, closed_package_no as package_no, closed_package_used as spent, 0 as forfeited
            from counted where closed_package_no is not null and closed_package_used <> 0
            union all select firma_id, package_no, 1, 0 from spent
              where package_no is not null and firma_id in (select firma_id from moves where first_package <> last_package)
            union all select firma_id, package_no, 0, units from forfeits
            union all select firma_id, package_no, -1, 0 from released) as x
          group by 1, 2) m
    where p.firma_id = m.firma_id and p.package_no = m.package_no
  ), days as (
    insert into license_usage_days as d (firma_id, day, redeemed)
    select firma_id, day, sum(n)::int8 from (
      select firma_id, closed_day as day, closed_day_redeemed as n from counted where closed_day is not null and closed_day_redeemed > 0
      union all select firma_id, day, day_spent from counted where late
      union all select firma_id, day, 1 from spent
        where firma_id in (select firma_id from moves where first_day <> last_day)) as c
    group by 1, 2
    on conflict (firma_id, day) do update set redeemed = d.redeemed + excluded.redeemed
  ), crossings as (
    insert into webhook_events (event_key, firma_id, type, payload)
    -- once per purchase: a crossing re-armed by one is keyed by the packages made (a forfeit
    -- lowers the total, so the total could come back to that of an earlier crossing)
    select e.type || ':' || c.firma_id || ':p' || c.packages_made, c.firma_id, e.type,
           jsonb_build_object('licenseKey', c.license_key, 'organizationName', c.organization_name,
             'totalQuota', c.total_quota, 'usedQuota', c.used_quota, 'remainingQuota', c.remaining,
             'expiryDate', to_char(c.expiry_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
           || case when e.type = 'quota.low' then jsonb_build_object('thresholdPercent', $3::int) else '{}'::jsonb end
    from counted c
    cross join lateral (values
      ('quota.low', $3::int > 0 and c.remaining_before * 100 > c.total_before * $3::int and c.remaining * 100 <= c.total_quota * $3::int),
      ('quota.exhausted', c.remaining_before > 0 and c.remaining = 0)
    ) as e(type, crossed)
    where c.webhook_url is not null and e.crossed
    on conflict (event_key) do nothing
  )
  select firma_id, (used_quota + released_quota)::float8 as used, released_quota::float8 as released from counted
  union all select null, count(*)::float8, null from used`;

/**
 * The statement for a batch none of whose redemptions is in Postgres yet, nearly every batch:
 * the redemptions inserted without `on conflict`, which spares each row a look-up of its key
 * before the insert and the speculative insertion's lock and confirmation. A batch that holds
 * a token already there (a batch written again after a worker died before its
 * acknowledgement, or two workers on one claimed batch) fails whole on that key, writing
 * nothing, and is written again with STATEMENT (persistBatch).
 */
const FIRST_WRITE = (() => {
  const guarded = `    on conflict (token_id) do nothing
    returning token_id, firma_id, used_at, package_no`;
  if (!STATEMENT.includes(guarded)) throw new Error('persist: the redemptions\' insert is not where FIRST_WRITE expects it');
  return STATEMENT.replace(guarded, '    returning token_id, firma_id, used_at, package_no');
})();
const UNIQUE_VIOLATION = '23505';

/** What a batch's write did: the used counts of the licenses it changed, and how many redemptions it inserted. */
export interface Persisted {
  counts: UsedCounts;
  /** redemption rows inserted: fewer than the batch's redemptions when some were there already (src/usage/secondRedemptions.ts) */
  redemptionsInserted: number;
}

/** As persistBatch, answering the used counts alone. */
export async function persistEvents(sql: Sql, events: readonly UsageEvent[], quotaLowPercent = 10): Promise<UsedCounts> {
  return (await persistBatch(sql, events, quotaLowPercent)).counts;
}

/**
 * Writes one batch as one statement (atomic by itself: no transaction to roll back on a
 * lost connection, where postgres.js 3.4 can crash the process): FIRST_WRITE, and STATEMENT
 * again when that found a redemption of the batch already written. So not inside a
 * transaction: the failed first write would abort it.
 */
export async function persistBatch(sql: Sql, events: readonly UsageEvent[], quotaLowPercent = 10): Promise<Persisted> {
  const counts: UsedCounts = new Map();
  const issued: string[] = [];
  const used: string[] = [];
  const signs: string[] = [];
  const forfeits: string[] = [];
  const releases: string[] = [];
  for (const e of events) {
    if (e.kind === 'issued') issued.push(e.values);
    else if (e.kind === 'forfeited') forfeits.push(e.values);
    else if (e.kind === 'released') releases.push(e.values);
    else if (e.kind === 'used') {
      if (e.receipt) signs.push(`${e.receipt.documents}${EVENT_SEPARATOR}${e.receipt.sha256}${EVENT_SEPARATOR}${e.values}`);
      else used.push(e.values);
    }
  }
  if (issued.length === 0 && used.length === 0 && signs.length === 0 && forfeits.length === 0 && releases.length === 0) {
    return { counts, redemptionsInserted: 0 };
  }
  const params = [issued.join('\n'), used.join('\n'), quotaLowPercent, signs.join('\n'), forfeits.join('\n'), releases.join('\n')];
  const rows = await sql.unsafe(FIRST_WRITE, params, { prepare: true }).catch((err: { code?: string; constraint_name?: string }) => {
    // a redemption of the batch is in Postgres already: nothing was written; again, guarded
    if (err.code === UNIQUE_VIOLATION && err.constraint_name?.startsWith('token_redemptions')) return sql.unsafe(STATEMENT, params, { prepare: true });
    throw err;
  });
  let redemptionsInserted = 0;
  for (const r of rows) {
    if (r.firma_id === null) redemptionsInserted = r.used as number;
    else counts.set(r.firma_id as string, { counted: r.used as number, released: r.released as number });
  }
  return { counts, redemptionsInserted };
}
