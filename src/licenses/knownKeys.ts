import type { Sql } from '../db/pg.js';

/** How often keys created elsewhere are picked up, in case a pub/sub message was missed. */
const REFRESH_MS = 30_000;

/**
 * Every license key that exists, in this process: a filter in front of Postgres, so a
 * spray of random keys costs no look-up (a Redis marker per unknown key would cost one
 * per key, and Redis memory besides). Loaded at start; an admin change anywhere announces
 * its key on the invalidation channel (added here at once); keys created since the last
 * look are read every REFRESH_MS as well, so a missed message costs a short delay, never
 * a license. A key can only be missing from here while Redis also lacks its credentials
 * (its creator writes them before announcing it): then it is refused as unknown until
 * the next refresh. A hash Redis holds for the key, fenced or of another Redis process,
 * says it exists all the same (lua/credentials.lua): it is looked up in Postgres.
 */
export class KnownKeys {
  private readonly keys = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private since = new Date(0);

  constructor(private readonly sql: Sql) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch(() => {
        // Postgres away: the keys known so far still serve; the next round catches up
      });
    }, REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  has(licenseKey: string): boolean {
    return this.keys.has(licenseKey);
  }

  add(licenseKey: string): void {
    this.keys.add(licenseKey);
  }

  /** Reads the keys created since the last look (at start, every REFRESH_MS, after a lost subscription). */
  async refresh(): Promise<void> {
    // a margin for transactions that committed after our last look with an earlier created_at
    const since = new Date(this.since.getTime() - REFRESH_MS);
    // now(): Postgres's clock, which stamps created_at
    const [found] = await this.sql`
      select now() as at, array(select license_key from licenses where created_at >= ${since}) as keys`;
    for (const key of (found?.keys ?? []) as string[]) this.keys.add(key);
    this.since = found?.at as Date;
  }
}
