import type { Sql } from '../db/pg.js';
import type { QueuedEvent } from './deadLetters.js';

export type UsageEvent =
  | (QueuedEvent & {
      kind: 'issued' | 'used';
      tokenId: string;
      firmaId: string;
      imzaTipi: number;
      /** issue time for "issued", redemption time for "used" */
      atMs: number;
      expiresMs: number | null;
      issuedMs: number | null;
      origin: string | null;
    })
  /** bad: fields the worker cannot read (a dead letter); gone: deleted while pending (nothing to write) */
  | (QueuedEvent & { kind: 'bad' | 'gone' });

type Good = Extract<UsageEvent, { kind: 'issued' | 'used' }>;

/** A token's events of one batch, the last of each kind winning. */
interface TokenEvents {
  issued: Good | null;
  used: Good | null;
}

function byToken(events: Good[]): Map<string, TokenEvents> {
  const tokens = new Map<string, TokenEvents>();
  for (const e of events) {
    let t = tokens.get(e.tokenId);
    if (t === undefined) tokens.set(e.tokenId, (t = { issued: null, used: null }));
    if (e.kind === 'issued') t.issued = e;
    else t.used = e;
  }
  return tokens;
}

/** firma id -> licenses.used_quota after a write, for the licenses it changed */
export type UsedCounts = Map<string, number>;

const ms = (value: number | null | undefined) => (value == null ? null : String(value));

/**
 * Writes one batch as one statement (atomic by itself: no transaction to roll back on a
 * lost connection, where postgres.js 3.4 can crash the process). Replays change nothing:
 * an issued token is inserted once, a redemption turns "issued" into "used" once, and the
 * license's used quota rises only by the rows that actually turned. A token issued and
 * redeemed within one batch is written once, as used: two parts of one statement may not
 * write the same row. Answers the used quota of every license the batch changed.
 */
export async function persistEvents(sql: Sql, events: UsageEvent[]): Promise<UsedCounts> {
  const counts: UsedCounts = new Map();
  const tokens = byToken(events.filter((e): e is Good => e.kind === 'issued' || e.kind === 'used'));
  if (tokens.size === 0) return counts;
  const issued: Good[] = [];
  const used: TokenEvents[] = [];
  for (const t of tokens.values()) {
    if (t.used) used.push(t);
    else if (t.issued) issued.push(t.issued);
  }
  const u = used.map((t) => t.used as Good);
  const rows = await sql`
    with issued as (
      insert into sign_tokens (token_id, firma_id, imza_tipi, status, issued_at, expires_at)
      select t, f, i, 'issued', timestamptz 'epoch' + s * interval '1 millisecond',
             timestamptz 'epoch' + e * interval '1 millisecond'
      from unnest(${sql.array(issued.map((e) => e.tokenId))}::text[], ${sql.array(issued.map((e) => e.firmaId))}::text[],
                  ${sql.array(issued.map((e) => String(e.imzaTipi)))}::int2[], ${sql.array(issued.map((e) => String(e.atMs)))}::int8[],
                  ${sql.array(issued.map((e) => ms(e.expiresMs)) as string[])}::int8[]) as u(t, f, i, s, e)
      on conflict (token_id) do nothing
    ), changed as (
      insert into sign_tokens as st (token_id, firma_id, imza_tipi, status, issued_at, expires_at, used_at, origin)
      select t, f, i, 'used', timestamptz 'epoch' + c * interval '1 millisecond',
             timestamptz 'epoch' + e * interval '1 millisecond', timestamptz 'epoch' + s * interval '1 millisecond', o
      from unnest(${sql.array(u.map((e) => e.tokenId))}::text[], ${sql.array(u.map((e) => e.firmaId))}::text[],
                  ${sql.array(u.map((e) => String(e.imzaTipi)))}::int2[], ${sql.array(u.map((e) => String(e.atMs)))}::int8[],
                  ${sql.array(used.map((t) => ms(t.used?.issuedMs ?? t.issued?.atMs)) as string[])}::int8[],
                  ${sql.array(used.map((t) => ms(t.issued?.expiresMs)) as string[])}::int8[],
                  ${sql.array(u.map((e) => e.origin) as string[])}::text[]) as u(t, f, i, s, c, e, o)
      on conflict (token_id) do update
        set status = 'used', used_at = excluded.used_at, origin = excluded.origin,
            issued_at = coalesce(st.issued_at, excluded.issued_at),
            expires_at = coalesce(st.expires_at, excluded.expires_at)
        where st.status <> 'used'
      returning st.firma_id
    )
    update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
    from (select firma_id, count(*) as count from changed group by firma_id) n
    where l.firma_id = n.firma_id
    returning l.firma_id, l.used_quota::float8 as used`;
  for (const r of rows) counts.set(r.firma_id as string, r.used as number);
  return counts;
}
