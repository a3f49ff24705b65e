import type { Logger } from 'pino';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import { GROUP } from './ack.js';

// Whether a redeem call may queue its redemptions as one stream entry of a line each
// (lua/includes/spentEntry.lua), which costs Redis and the worker about a third as much per
// event: only once every worker reading the usage streams takes such entries. A worker of an
// earlier release would read one as a malformed event and dead-letter it (replayable, but not
// counted until replayed), and several releases run side by side during a rolling upgrade.
// Workers that read lines say so in their consumer names (READS_LINES); the group's other
// consumers keep lines off until they have not read for READER_GONE_MS (a consumer stays in
// the group after its worker is gone).

/** The end of the consumer name of a worker that reads entries of several lines (src/usage/worker.ts). */
export const READS_LINES = '+lines';
/** A consumer without the mark that has not read for this long is a worker gone, not one to wait for. */
export const READER_GONE_MS = 15 * 60_000;
const REFRESH_MS = 10_000;

/** A consumer as XINFO CONSUMERS describes it: name, pending, idle and, from Redis 7.2, inactive. */
function describe(consumer: unknown[]): { name: string; idleMs: number } {
  const fields = new Map<string, unknown>();
  for (let i = 0; i + 1 < consumer.length; i += 2) fields.set(String(consumer[i]), consumer[i + 1]);
  return { name: String(fields.get('name') ?? ''), idleMs: Number(fields.get('idle') ?? 0) };
}

export class LineReaders {
  /** read on every redeem call: true once every reader of the streams takes lines */
  on = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly redis: RedisClient, private readonly keys: KeySpace, private readonly log: Logger) {}

  /** Asks at once, then every REFRESH_MS; lines stay off until an answer says every reader takes them. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Every stream's group asked; a stream without its group yet (no worker has run), or any failure: off. */
  async refresh(): Promise<boolean> {
    let on: boolean;
    try {
      const groups = await Promise.all(this.keys.streams.map((s) => this.redis.xinfo('CONSUMERS', s, GROUP) as Promise<unknown[][]>));
      on = groups.every((consumers) => consumers.every((c) => {
        const { name, idleMs } = describe(c);
        return name.endsWith(READS_LINES) || idleMs >= READER_GONE_MS;
      }));
    } catch {
      on = false;
    }
    if (on !== this.on) this.log.info({ lines: on }, on ? 'usage streams: every reader takes a call\'s redemptions as one entry'
      : 'usage streams: a reader of an earlier release reads them: a redemption an entry');
    this.on = on;
    return on;
  }
}
