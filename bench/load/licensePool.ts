import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, RATE_WINDOW_MS } from '../../src/config.js';
import { ACCESS_TOKEN_SECONDS } from '../../src/tokens/jwt.js';
import { api, createLicenses, type BenchLicense } from './licenses.js';
import { JWT_SECRET, SIGNING_KEYS } from './services.js';

// Licenses for servers running with their default limits. Validate is limited per company
// (RATE_VALIDATE_PER_MIN: 100 by default, in a window of a minute from the company's first
// request), so a run at R req/s for S seconds needs R·S/100 companies whose window is
// fresh, as a real deployment serves many companies each below its limit. The pool hands a
// run licenses whose last window has ended, with at most the limit's worth of tokens each,
// and takes them back when the run is over: their window ends at most a window later.

/**
 * the per-company validate limit of a server with RATE_VALIDATE_PER_MIN unset; read with the
 * bench's own secrets, as a placeholder secret refuses the configuration
 */
export const VALIDATE_LIMIT = loadConfig({ ALLOW_HTTP: '1', JWT_SECRET, SIGNING_KEYS }).rate.validate;
/** a license serves again this long after the run that used it ended (a second for clocks and stragglers) */
const WINDOW_MS = RATE_WINDOW_MS + 1000;
/** access tokens older than this are fetched again before minting (they last ACCESS_TOKEN_SECONDS) */
const ACCESS_FRESH_MS = (ACCESS_TOKEN_SECONDS - 180) * 1000;
/** tokens asked for when the rate is not known yet: a 2 s warm-up at 25,000 req/s */
const FIRST_GUESS = 50_000;
/** logins and creations at once (each hashes a password) */
const IN_FLIGHT = 8;

interface Member extends BenchLicense {
  accessAt: number;
  /** when its validate window has ended for sure; Infinity while a run holds it */
  freeAt: number;
}

/** The company a sign token names (its payload's firma_id: a client can read it too). */
function firmaOf(token: string): string {
  return (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as { firma_id: string }).firma_id;
}

export class LicensePool {
  private constructor(
    private readonly base: string,
    private readonly members: Member[],
    /** a file of at least `atLeast` fresh sign tokens minted with the access tokens of `accessFile` (round robin) */
    private readonly mint: (accessFile: string, atLeast: number) => Promise<string>,
    private readonly work: string,
  ) {}

  /** `count` licenses made on the service at `base` (its limits lifted: it logs in and mints for the bench). */
  static async create(base: string, count: number, mint: (accessFile: string, atLeast: number) => Promise<string>, work: string): Promise<LicensePool> {
    const started = Date.now();
    const licenses = await createLicenses(base, count, IN_FLIGHT);
    process.stderr.write(`bench: ${count} licenses for the runs at default limits made in ${Math.round((Date.now() - started) / 1000)} s\n`);
    return new LicensePool(base, licenses.map((l) => ({ ...l, accessAt: started, freeAt: 0 })), mint, work);
  }

  private files = 0;

  get size(): number {
    return this.members.length;
  }

  /**
   * A file of fresh sign tokens, at least `atLeast` (0: a first guess), at most
   * VALIDATE_LIMIT of each license, the licenses taking turns; returned once every one of
   * those licenses' windows has ended.
   */
  async tokens(atLeast: number): Promise<string> {
    const want = atLeast > 0 ? atLeast : FIRST_GUESS;
    const count = Math.ceil(want / VALIDATE_LIMIT);
    const unheld = this.members.filter((m) => m.freeAt !== Infinity).length;
    if (count > unheld) await this.grow(count - unheld);
    const byFreedom = [...this.members].sort((a, b) => a.freeAt - b.freeAt);
    const taken = byFreedom.slice(0, count);
    const freeAt = (taken[count - 1] as Member).freeAt;
    for (const m of taken) m.freeAt = Infinity;
    await this.refreshAccess(taken);
    const accessFile = path.join(this.work, `pool-access-${this.files}.txt`);
    writeFileSync(accessFile, taken.map((m) => m.access).join('\n') + '\n');
    const perLicense = new Map<string, string[]>(taken.map((m) => [m.firmaId, []]));
    let have = 0;
    // minting goes round the licenses; two rounds more than needed even out where it stops
    for (let ask = want + 2 * count; have < want; ask = Math.ceil(1.2 * (want - have)) + count) {
      for (const token of readFileSync(await this.mint(accessFile, ask), 'utf8').split('\n').filter(Boolean)) {
        const list = perLicense.get(firmaOf(token));
        if (list && list.length < VALIDATE_LIMIT) {
          list.push(token);
          have++;
        }
      }
    }
    // each license's tokens spread over the run, as companies validating side by side
    const lists = [...perLicense.values()];
    const ordered: string[] = [];
    for (let i = 0; i < VALIDATE_LIMIT; i++) for (const list of lists) if (i < list.length) ordered.push(list[i] as string);
    const file = path.join(this.work, `pool-tokens-${this.files++}.txt`);
    writeFileSync(file, ordered.join('\n') + '\n');
    // minted meanwhile (a window counts validates only), spent only once every window has ended
    const waitMs = freeAt - Date.now();
    if (waitMs > 0) {
      process.stderr.write(`  waiting ${(waitMs / 1000).toFixed(0)} s for ${count} licenses' validate windows to end (${this.members.length} licenses)\n`);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
    return file;
  }

  /** The runs on the licenses handed out are over: each is free again a window from now. */
  ended(): void {
    const freeAt = Date.now() + WINDOW_MS;
    for (const m of this.members) if (m.freeAt === Infinity) m.freeAt = freeAt;
  }

  /** More licenses, when a deployment needs more than the pool holds (a faster machine). */
  private async grow(count: number): Promise<void> {
    const started = Date.now();
    const more = await createLicenses(this.base, count, IN_FLIGHT);
    this.members.push(...more.map((l) => ({ ...l, accessAt: started, freeAt: 0 })));
    process.stderr.write(`  ${count} more licenses (${this.members.length} now): a deployment's runs needed more than BENCH_BASELINE_LICENSES\n`);
  }

  private async refreshAccess(members: Member[]): Promise<void> {
    const stale = members.filter((m) => Date.now() - m.accessAt > ACCESS_FRESH_MS);
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, stale.length) }, async () => {
      for (let m = stale[next++]; m !== undefined; m = stale[next++]) {
        m.accessAt = Date.now();
        m.access = (await api('POST', `${this.base}/api/v1/auth/get-token`, { licenseKey: m.key, password: m.password, imzaTipi: 0 })).accessToken;
      }
    }));
  }
}
