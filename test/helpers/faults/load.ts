import { call, outcomeLabel, type Outcome } from '../http.js';
import { claimsOf } from '../jwt.js';
import { MSG } from '../shapes.js';
import { sleep, waitFor } from '../wait.js';
import type { FaultLicense, Stack } from './stack.js';

// The load driver: clients over HTTP while the fault happens (get-token, then sign-token +
// validate loops, and retries of the lost answers), keeping the client's side of the books.

/** The client's side of one license's books. */
export interface LicenseBook {
  lic: FaultLicense;
  accessToken: string | null;
  /** sign tokens not yet validated (get-token's own) */
  spare: string[];
  /** token ids whose get-token or sign-token answered 200 */
  minted: Set<string>;
  /** every get-token and sign-token outcome but 200, counted ('401', '503', 'noAnswer', 'timeout') */
  mintFailures: Map<string, number>;
  /** token ids validate answered 200 */
  ok: Set<string>;
  /** token ids answered 200 a second time: double redemptions */
  doubles: string[];
  /** usedQuota of every 200 */
  usedQuotas: number[];
  /** every validate outcome but 200, counted, retries included */
  others: Map<string, number>;
  /** token ids whose validate answer was ever lost (no answer, timeout) or a 5xx */
  lost: Set<string>;
  /** lost, and not yet settled by a retry: token id -> the token */
  unsettled: Map<string, string>;
  /** retried tokens answered 400 "already used": their lost first attempt had spent them */
  retriedUsed: Set<string>;
}

export interface LoadOptions {
  /** concurrent client loops (mint one token, validate it), default 8 */
  concurrency?: number;
  /** per-request deadline, default 5000 ms */
  timeoutMs?: number;
  /** pause of a loop between iterations, default 0 */
  pauseMs?: number;
  /** pause of a loop after a failed request, default 50 ms */
  errorPauseMs?: number;
  /** base URL of each request, default the stack's servers round-robin */
  target?: () => string;
}

export interface TimelineEntry {
  at: number;
  license: number;
  outcome: string;
}

function bump(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/**
 * Clients over HTTP: per license one get-token, then loops of sign-token + validate. Every
 * outcome is kept on the client's side of the books; start() and stop() may alternate.
 */
export class Load {
  readonly books: LicenseBook[];
  /** every validate outcome, in order (retries too) */
  readonly timeline: TimelineEntry[] = [];
  private running = false;
  private stopOnTeardown = false;
  private loops: Promise<void>[] = [];
  private turn = 0;
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly pauseMs: number;
  private readonly errorPauseMs: number;
  private readonly target: () => string;

  constructor(readonly stack: Stack, licenses: FaultLicense[], options: LoadOptions = {}) {
    this.books = licenses.map((lic) => ({
      lic, accessToken: null, spare: [], minted: new Set(), mintFailures: new Map(), ok: new Set(), doubles: [],
      usedQuotas: [], others: new Map(), lost: new Set(), unsettled: new Map(), retriedUsed: new Set(),
    }));
    this.concurrency = options.concurrency ?? 8;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.pauseMs = options.pauseMs ?? 0;
    this.errorPauseMs = options.errorPauseMs ?? 50;
    let rr = 0;
    this.target = options.target ?? (() => stack.url(rr++ % stack.servers.length));
  }

  /** get-token for every license that has no access token yet, then the loops. */
  async start(): Promise<void> {
    if (this.running) return;
    if (!this.stopOnTeardown) {
      this.stopOnTeardown = true;
      this.stack.teardown(() => this.stop()); // before the processes are killed (last in, first out)
    }
    for (const book of this.books) if (book.accessToken === null) await this.getToken(book);
    this.running = true;
    this.loops = Array.from({ length: this.concurrency }, () => this.loop());
  }

  /** Stops the loops and waits for their requests in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** validate 200s so far, every license. */
  okCount(): number {
    return this.books.reduce((n, b) => n + b.ok.size, 0);
  }

  unsettledCount(): number {
    return this.books.reduce((n, b) => n + b.unsettled.size, 0);
  }

  /** Every validate outcome but 200, summed over the licenses. */
  others(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.books) for (const [k, v] of b.others) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  /** Every get-token/sign-token outcome but 200, summed over the licenses. */
  mintFailures(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.books) for (const [k, v] of b.mintFailures) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  async waitForOk(n: number, timeoutMs = 20_000): Promise<void> {
    await waitFor(() => `${n} validate 200s (have ${this.okCount()})`, () => this.okCount() >= n, timeoutMs);
  }

  /**
   * A client retry: validates again every token whose answer was lost or 5xx, until each
   * has an answer that is not a 5xx or `rounds` are done. Resolves with the retry outcomes.
   */
  async retryUnsettled(rounds = 3): Promise<Record<string, number>> {
    const counts = new Map<string, number>();
    for (let round = 0; round < rounds && this.unsettledCount() > 0; round++) {
      if (round > 0) await sleep(500);
      for (const [index, book] of this.books.entries()) {
        const pending = [...book.unsettled.values()];
        for (let i = 0; i < pending.length; i += this.concurrency) {
          await Promise.all(pending.slice(i, i + this.concurrency).map(async (jwt) => {
            const outcome = await this.validate(index, book, jwt);
            bump(counts, outcomeLabel(outcome));
          }));
        }
      }
    }
    return Object.fromEntries(counts);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const index = this.turn++ % this.books.length;
      const book = this.books[index] as LicenseBook;
      let failed: boolean;
      if (book.accessToken === null) {
        failed = !(await this.getToken(book));
      } else {
        const jwt = book.spare.pop() ?? await this.signToken(book);
        if (jwt === null) failed = true;
        else {
          const outcome = await this.validate(index, book, jwt);
          failed = outcome.kind !== 'answer' || outcome.status >= 500;
        }
      }
      if (failed) await sleep(this.errorPauseMs);
      else if (this.pauseMs > 0) await sleep(this.pauseMs);
    }
  }

  private async getToken(book: LicenseBook): Promise<boolean> {
    const { licenseKey, password } = book.lic;
    const o = await call(this.target(), 'POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi: 0 }, {}, this.timeoutMs);
    if (o.kind !== 'answer' || o.status !== 200) {
      bump(book.mintFailures, outcomeLabel(o));
      return false;
    }
    book.accessToken = o.body.accessToken as string;
    book.spare.push(o.body.signToken as string);
    book.minted.add(claimsOf(o.body.signToken as string).token_id);
    return true;
  }

  private async signToken(book: LicenseBook): Promise<string | null> {
    const o = await call(this.target(), 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 },
      { authorization: `Bearer ${book.accessToken}` }, this.timeoutMs);
    if (o.kind !== 'answer' || o.status !== 200) {
      bump(book.mintFailures, outcomeLabel(o));
      return null;
    }
    const jwt = o.body.signToken as string;
    book.minted.add(claimsOf(jwt).token_id);
    return jwt;
  }

  private async validate(index: number, book: LicenseBook, jwt: string): Promise<Outcome> {
    const tokenId = claimsOf(jwt).token_id;
    const retry = book.unsettled.has(tokenId);
    const o = await call(this.target(), 'POST', '/api/license/validate', { token: jwt }, {}, this.timeoutMs);
    this.timeline.push({ at: Date.now(), license: index, outcome: outcomeLabel(o) });
    if (o.kind === 'answer' && o.status === 200) {
      if (book.ok.has(tokenId)) book.doubles.push(tokenId);
      book.ok.add(tokenId);
      book.usedQuotas.push(Number(o.body?.usedQuota));
      book.unsettled.delete(tokenId);
      return o;
    }
    bump(book.others, outcomeLabel(o));
    if (o.kind !== 'answer' || o.status >= 500) {
      book.lost.add(tokenId);
      book.unsettled.set(tokenId, jwt);
    } else if (retry) {
      book.unsettled.delete(tokenId);
      if (o.status === 400 && o.body?.message === MSG.USED) book.retriedUsed.add(tokenId);
    }
    return o;
  }
}
