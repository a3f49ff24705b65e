import type { RedisClient } from './client.js';

/** How often the offset between this process's clock and Redis's is measured again. */
const RESYNC_MS = 30_000;
/** A measurement whose round trip took longer says little about the offset: kept out. */
const MAX_RTT_MS = 50;

/**
 * Deadlines for the scripts that change state, in Redis's clock. A call that reaches Redis
 * after its client stopped waiting (a Redis paused, a connection queued while down) must
 * change nothing, or a unit would be spent for a request answered 503. The deadline comes
 * half the command timeout before the client gives up, so that an answer produced in time
 * still has that long to travel back (a quarter was seen too little on a loaded machine);
 * an answer that has arrived is read before the timeout fails its command, however long the
 * process stalled (src/redis/client.ts).
 */
export class RedisClock {
  private offsetMs = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly budgetMs: number;

  constructor(private readonly redis: RedisClient, commandTimeoutMs: number) {
    this.budgetMs = Math.floor(commandTimeoutMs * 0.5);
  }

  /** Measures once (start fails if Redis does not answer), then again now and then. */
  async start(): Promise<void> {
    await this.measure();
    this.timer = setInterval(() => void this.measure().catch(() => {}), RESYNC_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The deadline of a call sent now, ms since epoch by Redis's clock. */
  deadline(now: number): number {
    return now + this.offsetMs + this.budgetMs;
  }

  private async measure(): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const sent = Date.now();
      const [seconds, micros] = await this.redis.time();
      const back = Date.now();
      if (back - sent > MAX_RTT_MS) continue;
      const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      this.offsetMs = redisMs - Math.round((sent + back) / 2);
      return;
    }
  }
}
