import type { Sql } from '../db/pg.js';
import { EVENT_SEPARATOR } from '../redis/scripts.js';
import type { UsageEvent } from './events.js';

/** firma id -> licenses.used_quota after a write, for the licenses it changed */
export type UsedCounts = Map<string, number>;

/**
 * One batch, one statement. The events travel as two text parameters, one event a line
 * (its values tab-separated, as the stream holds them: src/usage/events.ts), and Postgres
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
 * A sign's redemption ($4: its token id, document count and receipt digest, one a line)
 * adds them to its row; a validate's row has neither.
 *
 * The same statement writes the webhook events the batch causes (docs/api.md#webhooks): for a
 * license with a webhook URL whose remaining quota this batch took from above a threshold
 * to at or below it (quota.low: $3 % of the total; quota.exhausted: 0), one outbox row,
 * keyed by the license's total, so a crossing is recorded once however often its events
 * are replayed (sql/005_webhooks.sql). The remaining quota before the batch is the one
 * after it plus the redemptions it inserted: every rise of used_quota is one of these
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
    insert into token_redemptions (token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256)
    select v[1]::uuid, v[2], v[3]::int2, timestamptz 'epoch' + v[4]::int8 * interval '1 millisecond',
           timestamptz 'epoch' + nullif(v[5], '')::int8 * interval '1 millisecond', v[6], r[2]::int2, r[3]
    from (select string_to_array(e, E'\\t') as v from unnest(string_to_array($2::text, E'\\n')) as e) as u
    left join (select string_to_array(e, E'\\t') as r from unnest(string_to_array($4::text, E'\\n')) as e) as s on s.r[1] = u.v[1]
    on conflict (token_id) do nothing
    returning firma_id
  ), counted as (
    update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
    from (select firma_id, count(*) as count from used group by firma_id) n
    where l.firma_id = n.firma_id
    returning l.firma_id, l.license_key, l.organization_name, l.total_quota, l.used_quota, l.expiry_date, l.webhook_url,
              greatest(l.total_quota - l.used_quota, 0) as remaining,
              greatest(l.total_quota - l.used_quota + n.count, 0) as remaining_before
  ), crossings as (
    insert into webhook_events (event_key, firma_id, type, payload)
    select e.type || ':' || c.firma_id || ':' || c.total_quota, c.firma_id, e.type,
           jsonb_build_object('licenseKey', c.license_key, 'organizationName', c.organization_name,
             'totalQuota', c.total_quota, 'usedQuota', c.used_quota, 'remainingQuota', c.remaining,
             'expiryDate', to_char(c.expiry_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
           || case when e.type = 'quota.low' then jsonb_build_object('thresholdPercent', $3::int) else '{}'::jsonb end
    from counted c
    cross join lateral (values
      ('quota.low', $3::int > 0 and c.remaining_before * 100 > c.total_quota * $3::int and c.remaining * 100 <= c.total_quota * $3::int),
      ('quota.exhausted', c.remaining_before > 0 and c.remaining = 0)
    ) as e(type, crossed)
    where c.webhook_url is not null and e.crossed
    on conflict (event_key) do nothing
  )
  select firma_id, used_quota::float8 as used from counted`;

/**
 * Writes one batch as one statement (atomic by itself: no transaction to roll back on a
 * lost connection, where postgres.js 3.4 can crash the process).
 */
export async function persistEvents(sql: Sql, events: readonly UsageEvent[], quotaLowPercent = 10): Promise<UsedCounts> {
  const counts: UsedCounts = new Map();
  const issued: string[] = [];
  const used: string[] = [];
  const receipts: string[] = [];
  for (const e of events) {
    if (e.kind === 'issued') issued.push(e.values);
    else if (e.kind === 'used') {
      used.push(e.values);
      if (e.receipt) receipts.push(`${e.values.slice(0, e.values.indexOf(EVENT_SEPARATOR))}${EVENT_SEPARATOR}${e.receipt.documents}${EVENT_SEPARATOR}${e.receipt.sha256}`);
    }
  }
  if (issued.length === 0 && used.length === 0) return counts;
  const rows = await sql.unsafe(STATEMENT, [issued.join('\n'), used.join('\n'), quotaLowPercent, receipts.join('\n')], { prepare: true });
  for (const r of rows) counts.set(r.firma_id as string, r.used as number);
  return counts;
}
