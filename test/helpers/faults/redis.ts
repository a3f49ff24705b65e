import { sleep } from '../wait.js';
import type { Stack } from './stack.js';
import { LicenseField } from '../../../src/redis/fields.js';
import { entryEvents, redemptionOf } from '../../../src/usage/events.js';

// Redis of a fault test read and broken: failed-login counters, the usage streams read at
// the moment Redis is lost (killFrozen), and CountWatch, which catches Redis's 'u' of a
// license below Postgres's used_quota.

/** Failed get-tokens counted against client addresses (lua/failures.lua), summed over addresses. */
export async function failedLoginSlots(stack: Stack): Promise<number> {
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await stack.redisClient.scan(cursor, 'MATCH', stack.keys.failures('*'), 'COUNT', 1000);
    cursor = next;
    for (const key of keys) total += Number(await stack.redisClient.get(key) ?? 0);
  } while (cursor !== '0');
  return total;
}

// ---- Redis lost ----------------------------------------------------------------------------

/** Token ids of the redemptions in the usage streams, read now (an entry may hold several: entryEvents). */
export async function queuedRedemptions(stack: Stack): Promise<Set<string>> {
  const out = new Set<string>();
  for (const stream of stack.keys.streams) {
    const entries = await stack.redisClient.xrange(stream, '-', '+');
    for (const [, entry] of entries) {
      for (const fields of entryEvents(entry)) {
        const redemption = redemptionOf(fields);
        if (redemption) out.add(redemption.tokenId);
      }
    }
  }
  return out;
}

/** Of these token ids, those that are 'used' in Postgres now. */
export async function usedInPostgres(stack: Stack, tokenIds: Iterable<string>): Promise<Set<string>> {
  const ids = [...tokenIds];
  if (ids.length === 0) return new Set();
  const rows = await stack.sql<{ token_id: string }[]>`
    select token_id from sign_tokens where token_id = any(${ids}) and status = 'used'`;
  return new Set(rows.map((r) => r.token_id));
}

/**
 * Stops every write to the private Redis (CLIENT PAUSE WRITE: scripts wait, reads go on),
 * reads the redemptions queued in its streams, then SIGKILLs it: what was queued at the
 * moment of the kill, exactly, since nothing could be written in between.
 */
export async function killFrozen(stack: Stack): Promise<{ queued: Set<string>; killedAt: number }> {
  await stack.redis.cli('client', 'pause', '10000', 'write');
  const queued = await queuedRedemptions(stack);
  await stack.redis.signal('SIGKILL');
  return { queued, killedAt: Date.now() };
}

/**
 * Samples Postgres's used_quota and then Redis's 'u' of each license (in that order: both
 * only grow, so a Redis copy that holds every persisted redemption is never read below
 * Postgres) every intervalMs until stopped; records every sample where Redis was below.
 */
export class CountWatch {
  readonly below: { at: number; license: number; pgUsed: number; redisU: number | null }[] = [];
  samples = 0;
  private running = true;
  private readonly done: Promise<void>;

  constructor(private readonly stack: Stack, private readonly firmaIds: string[], intervalMs = 100) {
    this.done = (async () => {
      while (this.running) {
        await this.sample().catch(() => {});
        await sleep(intervalMs);
      }
    })();
  }

  private async sample(): Promise<void> {
    const rows = await this.stack.sql<{ firma_id: string; used: number }[]>`
      select firma_id, used_quota::int as used from licenses where firma_id = any(${this.firmaIds})`;
    const pg = new Map(rows.map((r) => [r.firma_id, r.used]));
    const redis = await Promise.all(this.firmaIds.map((f) => this.stack.redisClient.hget(this.stack.keys.forLicense(f).license, LicenseField.usedQuota)));
    this.samples++;
    for (const [i, firmaId] of this.firmaIds.entries()) {
      const u = redis[i];
      const pgUsed = pg.get(firmaId) ?? 0;
      // no copy yet: the next request hydrates it from Postgres
      if (u === null || u === undefined) continue;
      if (Number(u) < pgUsed) this.below.push({ at: Date.now(), license: i, pgUsed, redisU: Number(u) });
    }
  }

  /**
   * The samples below Postgres that the next one did not resolve. A copy counting less than
   * the batch the worker held across a loss is dropped by the call acknowledging that batch
   * (lua/ack.lua), a few ms after Postgres committed it: one sample may fall in between,
   * never two in a row for one license (a dropped copy is not below).
   */
  lasting(windowMs = 250): CountWatch['below'] {
    return this.below.filter((b, i) => this.below.slice(i + 1).some((c) => c.license === b.license && c.at - b.at <= windowMs));
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
