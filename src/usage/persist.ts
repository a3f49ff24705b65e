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

/** The last event per token wins within a batch: Postgres cannot update one row twice in a statement. */
function lastPerToken(events: Good[]): Good[] {
  const byToken = new Map<string, Good>();
  for (const e of events) byToken.set(e.tokenId, e);
  return [...byToken.values()];
}

const ms = (value: number | null) => (value === null ? null : String(value));

/**
 * Writes one batch in one transaction. Replays change nothing: an issued token is inserted
 * once, a redemption turns "issued" into "used" once, and the license's used quota rises
 * only by the rows that actually turned.
 */
export async function persistEvents(sql: Sql, events: UsageEvent[]): Promise<void> {
  const good = events.filter((e): e is Good => e.kind === 'issued' || e.kind === 'used');
  const issued = lastPerToken(good.filter((e) => e.kind === 'issued'));
  const used = lastPerToken(good.filter((e) => e.kind === 'used'));
  if (issued.length === 0 && used.length === 0) return;
  await sql.begin(async (tx) => {
    if (issued.length > 0) {
      await tx`
        insert into sign_tokens (token_id, firma_id, imza_tipi, status, issued_at, expires_at)
        select t, f, i, 'issued', timestamptz 'epoch' + s * interval '1 millisecond',
               timestamptz 'epoch' + e * interval '1 millisecond'
        from unnest(${tx.array(issued.map((e) => e.tokenId))}::text[], ${tx.array(issued.map((e) => e.firmaId))}::text[],
                    ${tx.array(issued.map((e) => String(e.imzaTipi)))}::int2[], ${tx.array(issued.map((e) => String(e.atMs)))}::int8[],
                    ${tx.array(issued.map((e) => ms(e.expiresMs)) as string[])}::int8[]) as u(t, f, i, s, e)
        on conflict (token_id) do nothing`;
    }
    if (used.length > 0) {
      await tx`
        with changed as (
          insert into sign_tokens as st (token_id, firma_id, imza_tipi, status, issued_at, used_at, origin)
          select t, f, i, 'used', timestamptz 'epoch' + c * interval '1 millisecond',
                 timestamptz 'epoch' + s * interval '1 millisecond', o
          from unnest(${tx.array(used.map((e) => e.tokenId))}::text[], ${tx.array(used.map((e) => e.firmaId))}::text[],
                      ${tx.array(used.map((e) => String(e.imzaTipi)))}::int2[], ${tx.array(used.map((e) => String(e.atMs)))}::int8[],
                      ${tx.array(used.map((e) => ms(e.issuedMs)) as string[])}::int8[],
                      ${tx.array(used.map((e) => e.origin) as string[])}::text[]) as u(t, f, i, s, c, o)
          on conflict (token_id) do update
            set status = 'used', used_at = excluded.used_at, origin = excluded.origin,
                issued_at = coalesce(st.issued_at, excluded.issued_at)
            where st.status <> 'used'
          returning st.firma_id
        )
        update licenses l set used_quota = l.used_quota + n.count, updated_at = now()
        from (select firma_id, count(*) as count from changed group by firma_id) n
        where l.firma_id = n.firma_id`;
    }
  });
}
