import postgres from 'postgres';
import type { RedisClient } from '../redis/client.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';
import { fieldRecord, type QueuedEvent } from './events.js';

// Usage events Postgres refuses for good (a value it cannot store, a constraint it will
// not break) are moved here, one stream per deployment, instead of being retried forever:
// one bad event must never stop every other license's events from reaching Postgres.
// Each entry keeps the event's fields as they were queued, so after a fix `npm run
// dead-letters -- replay` puts them back on their usage stream, where the worker writes
// them as usual (the write is idempotent, so a replayed event counts once).

/** An event Postgres (or the worker) refused, with why. */
export interface Refused<E extends QueuedEvent = QueuedEvent> {
  event: E;
  error: string;
  code: string;
}

export interface DeadLetter extends QueuedEvent {
  /** id in the dead-letter stream */
  deadId: string;
  error: string;
  code: string;
}

/**
 * The latest dead letters an event is compared with before it is buried (lua/bury.lua):
 * more than are buried between a batch's two attempts, few enough to read in about a
 * millisecond, on the rare call that buries anything.
 */
const BURIED_WINDOW = 1000;

/** SQLSTATE classes of a row Postgres will refuse however often it is sent. */
const PERMANENT_CLASSES = new Set([
  '22', // data exception: NUL in text, a number out of range, a bad encoding
  '23', // integrity constraint violation
  '54', // program limit exceeded: a value too large
]);

/**
 * Whether Postgres refused the statement because of what it holds. Everything else (a
 * lost connection, a timeout, a serialization failure, a server shutting down) is
 * transient: the batch is sent again.
 */
export function isPermanent(err: unknown): boolean {
  return err instanceof postgres.PostgresError && PERMANENT_CLASSES.has(String(err.code).slice(0, 2));
}

export class DeadLetters {
  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
  ) {}

  /**
   * Records refused events (the caller acknowledges them on their streams afterwards), each
   * once: an event of a batch written again after its acknowledgement failed is buried
   * already (lua/bury.lua). Resolves how many were added.
   */
  async bury(refused: Refused[]): Promise<number> {
    if (refused.length === 0) return 0;
    const values: string[] = [];
    for (const { event, error, code } of refused) values.push(event.stream, event.id, error, code, JSON.stringify(event.fields));
    return runScript(this.redis, scripts.bury(this.key, BURIED_WINDOW, values));
  }

  count(): Promise<number> {
    return this.redis.xlen(this.key);
  }

  async list(max = 10_000): Promise<DeadLetter[]> {
    const entries = (await this.redis.xrange(this.key, '-', '+', 'COUNT', max)) as [string, string[]][];
    return entries.map(([deadId, raw]) => {
      const f = fieldRecord(raw);
      let fields: string[] = [];
      try {
        const parsed: unknown = JSON.parse(f.event ?? '[]');
        if (Array.isArray(parsed)) fields = parsed.map(String);
      } catch {
        // kept as an empty event: replay skips it
      }
      return { deadId, stream: f.stream ?? '', id: f.id ?? '', fields, error: f.error ?? '', code: f.code ?? '' };
    });
  }

  /**
   * Puts dead letters back on their usage streams (all, or those whose dead-letter id or
   * original id is given) and removes them here. Returns how many went back.
   */
  async replay(only?: readonly string[]): Promise<number> {
    let replayed = 0;
    for (const letter of await this.list()) {
      if (only && only.length > 0 && !only.includes(letter.deadId) && !only.includes(letter.id)) continue;
      if (letter.stream === '' || letter.fields.length < 2) continue;
      await this.redis.xadd(letter.stream, '*', ...letter.fields);
      await this.redis.xdel(this.key, letter.deadId);
      replayed++;
    }
    return replayed;
  }
}
