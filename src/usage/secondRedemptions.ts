import type { Sql } from '../db/pg.js';
import { EVENT_SEPARATOR } from '../redis/fields.js';
import type { Refused } from './deadLetters.js';
import type { UsageEvent } from './events.js';

/** The dead letters' code of a second redemption of one token (docs/operations.md#second-redemptions). */
export const SECOND_REDEMPTION = 'SECOND_REDEMPTION';

type Redemption = UsageEvent & { kind: 'used' };

/** A redemption event's token id and time (ms), from its values (EventValues.spent: package, token id, firma id, imza tipi, at...). */
function tokenAndTime(e: Redemption): { tokenId: string; firmaId: string; atMs: number } {
  const v = e.values.split(EVENT_SEPARATOR);
  return { tokenId: v[1] as string, firmaId: v[2] as string, atMs: Number(v[4]) };
}

/**
 * The redemptions of a written batch that Postgres did not insert because their token was
 * redeemed already at another time: a second redemption of one token, which the service's
 * fences exist to rule out (src/redis/restarts.ts). The write inserts a token's redemption
 * once (on conflict do nothing), so a replay of the same event after a worker died (same
 * token, same time) counts once and is no second redemption; an event of the same token at
 * another time is, and was counted by Redis but not by Postgres. Such events are found here
 * instead of being dropped in silence: the worker buries each as a dead letter, counts it
 * (license_usage_second_redemptions_total) and has the license's Redis copy rebuilt from
 * Postgres, so the two agree again. Asked only when the batch inserted fewer redemptions
 * than it carried (a replay, or this): the common batch costs nothing more.
 */
export async function secondRedemptions(sql: Sql, events: readonly UsageEvent[], inserted: number): Promise<Refused<UsageEvent>[]> {
  let carried = 0;
  for (const e of events) if (e.kind === 'used') carried++;
  if (inserted >= carried) return [];
  const redemptions = events.filter((e): e is Redemption => e.kind === 'used').map((event) => ({ event, ...tokenAndTime(event) }));
  const rows = await sql.unsafe(
    `select token_id::text as token_id, (extract(epoch from used_at) * 1000)::int8::text as at_ms
       from token_redemptions where token_id = any($1::uuid[])`,
    [[...new Set(redemptions.map((r) => r.tokenId))]],
  );
  const first = new Map<string, number>();
  for (const r of rows) first.set(String(r.token_id), Number(r.at_ms));
  const seen = new Set<string>();
  const refused: Refused<UsageEvent>[] = [];
  for (const r of redemptions) {
    const at = first.get(r.tokenId);
    // the first of a batch's events at the stored time is the redemption counted; any other is a second
    if (at === undefined || (at === r.atMs && !seen.has(r.tokenId))) {
      seen.add(r.tokenId);
      continue;
    }
    refused.push({
      event: r.event, code: SECOND_REDEMPTION,
      error: `token ${r.tokenId} of ${r.firmaId} was redeemed at ${new Date(at).toISOString()}; this redemption at ` +
        `${new Date(r.atMs).toISOString()} reached Postgres second and is not counted (the license's Redis copy is rebuilt from Postgres)`,
    });
  }
  return refused;
}

/** The firma id of a second redemption's event. */
export function firmaOf(refused: Refused): string {
  return tokenAndTime(refused.event as Redemption).firmaId;
}
