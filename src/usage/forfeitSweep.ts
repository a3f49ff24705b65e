import type { Logger } from 'pino';
import type { Sql } from '../db/pg.js';
import type { HotLicenses } from '../licenses/hot.js';
import type { Companion } from './worker.js';

/** How often Postgres is asked for packages that expired with units left. */
export const SWEEP_INTERVAL_MS = 2_000;
/** Packages named per pass: more wait for the next. */
const SWEEP_LIMIT = 500;

/** Where the last pass stopped, in the sweep's order. */
interface SweepCursor {
  /** as Postgres writes it: a Date would drop its microseconds */
  expiresAt: string;
  firmaId: string;
  packageNo: number;
}

/**
 * Forfeits the units of expired packages of licenses nobody is using, beside the usage worker.
 * Redemptions and issuances forfeit on their own (lua/includes/packages.lua), so without this
 * only a license in use would see its total fall at a package's expiry. Postgres names the
 * licenses with a package expired and neither spent nor forfeited as far as it has written;
 * Redis, which decides, forfeits (lua/settle.lua), and the usage worker writes the forfeit as
 * it writes every event. A package Redis has already settled is named again until the worker
 * has written it, and settling it again changes nothing.
 */
export class ForfeitSweep implements Companion {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** null: the next pass starts from the first package due */
  private after: SweepCursor | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly hot: HotLicenses,
    private readonly log: Logger,
    private readonly intervalMs = SWEEP_INTERVAL_MS,
    private readonly limit = SWEEP_LIMIT,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.pass(), this.intervalMs);
    this.timer.unref();
  }

  /** Waits for a pass in flight for at most timeoutMs: a Postgres that does not answer cannot hold the stop. */
  async stop(timeoutMs: number): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); })]);
    clearTimeout(timer);
  }

  /** One pass; never throws. Resolves the units forfeited. */
  pass(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.sweep().then((units) => {
      if (units > 0) this.log.info({ units }, 'expired packages forfeited');
    }, (err: unknown) => {
      this.log.warn({ err }, 'forfeit sweep failed, tried again on the next');
    }).finally(() => { this.running = null; });
    return this.running;
  }

  /**
   * A package is named while its row has units left; the spends a license's row still counts
   * for its open package (sql/015_open_package.sql) are folded into the row of an expired one
   * first, in the same statement, so a package spent out leaves the sweep's index instead of
   * being named on every pass. A package Postgres shows with units left that Redis has none
   * of (their spends not written yet, or buried as dead letters) is named again and again
   * without a forfeit: each pass goes on after the last package the one before named, so as
   * many of those as a pass takes cannot keep the packages after them from being swept.
   */
  private async sweep(): Promise<number> {
    const after = this.after;
    const due = await this.sql`
      with due as (
        select firma_id, package_no, expires_at from license_package_rows
        where expires_at <= now() and forfeited = 0 and not spent_out
          ${after === null ? this.sql`` : this.sql`and (expires_at, firma_id, package_no) > (${after.expiresAt}::timestamptz, ${after.firmaId}, ${after.packageNo})`}
        order by expires_at, firma_id, package_no
        limit ${this.limit}
      ), folded as (
        update licenses l set open_package_no = null, open_package_used = 0,
                              closed_package_no = l.open_package_no, closed_package_used = l.open_package_used
        from due d where l.firma_id = d.firma_id and l.open_package_no = d.package_no
        returning l.firma_id, l.closed_package_no, l.closed_package_used
      ), rows as (
        update license_package_rows p set used = p.used + f.closed_package_used
        from folded f where p.firma_id = f.firma_id and p.package_no = f.closed_package_no
      )
      select firma_id, package_no, expires_at::text as expires_text from due order by due.expires_at, firma_id, package_no`;
    const last = due.length < this.limit ? undefined : due[due.length - 1];
    this.after = last === undefined ? null
      : { expiresAt: last.expires_text as string, firmaId: last.firma_id as string, packageNo: last.package_no as number };
    let units = 0;
    for (const firmaId of new Set(due.map((row) => row.firma_id as string))) units += await this.hot.settle(firmaId);
    return units;
  }
}
