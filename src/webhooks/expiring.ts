import type { Sql } from '../db/pg.js';

/**
 * license.expiring for every active license with a webhook whose expiry date is within
 * `days` and not yet past, once per expiry date (the event key holds it: an admin who
 * moves the date gets a new event for the new one, a scan that finds the same date again
 * adds nothing). The data is the license as Postgres holds it at the scan.
 */
const SCAN = `
  insert into webhook_events (event_key, firma_id, type, payload)
  select 'license.expiring:' || firma_id || ':' || (extract(epoch from expiry_date) * 1000)::bigint, firma_id, 'license.expiring',
         jsonb_build_object('licenseKey', license_key, 'organizationName', organization_name,
           'totalQuota', total_quota, 'usedQuota', used_quota, 'remainingQuota', greatest(total_quota - used_quota, 0),
           'expiryDate', to_char(expiry_date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'daysLeft', ceil(extract(epoch from expiry_date - now()) / 86400)::int)
  from licenses
  where webhook_url is not null and is_active and expiry_date > now() and expiry_date <= now() + $1::int * interval '1 day'
  on conflict (event_key) do nothing
  returning 1`;

/** Writes the license.expiring events due now; returns how many were new. */
export async function scanExpiring(sql: Sql, days: number): Promise<number> {
  const rows = await sql.unsafe(SCAN, [days], { prepare: true });
  return rows.length;
}
