import type { RedisRestarts } from '../redis/restarts.js';
import { ServiceUnavailable } from '../errors.js';
import { LicenseField as L } from '../redis/fields.js';
import { LOOK_UP_ONLY, scripts, type LoginAttempt } from '../redis/scriptBuilders.js';
import { NO_GATE, type FailureGate } from '../redis/scriptReplies.js';
import { Outcome, SyncOutcome, type RateCount } from '../redis/outcomes.js';
import { runScript } from '../redis/scriptCall.js';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import type { KnownKeys } from './knownKeys.js';
import { decodeDomains } from './origin.js';
import { copyOf, credentialsFields, licenseFields, updateOf, type Queued } from './rowCopy.js';
import { entryEvents, forfeitOf, redemptionOf, releaseOf } from '../usage/events.js';
import type { LicenseRow } from './licenseRow.js';
import type { LicenseStore } from './store.js';

// The license as the request path sees it: its Redis copy, written from Postgres rows and
// read back, reloaded when Redis lost it or an admin change fenced it. One concern:
// HotLicenses decides when a copy is written, fenced and reloaded, the one place that
// does; what a copy holds is computed in ./rowCopy.ts.

/** The live state of a license as the request path sees it (Redis, ahead of Postgres). */
export interface LiveLicense {
  firmaId: string;
  licenseKey: string;
  organizationName: string;
  totalQuota: number;
  usedQuota: number;
  expiryMs: number;
  isActive: boolean;
  /** the origins it accepts, normalised ([]: any) */
  domains: string[];
}

/** What get-token needs of a license key. */
export interface Credentials {
  firmaId: string;
  passwordHash: string;
  /** the license's token generation, read with the hash (lua/credentials.lua) */
  generation: string;
}

/**
 * A look-up of credentials: null when there is no such license; waitMs > 0 when the key's
 * tokens for this window are issued; what that limit says; whether the address is trusted
 * at the key, and the failure budget the attempt was held to (lua/credentials.lua).
 */
export interface CredentialsLookup {
  credentials: Credentials | null;
  waitMs: number;
  rate: RateCount;
  trusted: boolean;
  gate: FailureGate;
}

/** Redemptions read per XRANGE call when counting a stream's queued events. */
const SCAN_PAGE = 1000;
/**
 * A fence outlives its change's deadline by this much before a hydration may lift it: an
 * UPDATE that passed its deadline check takes its row lock within microseconds, and the
 * hydration's share lock then waits for its commit (src/licenses/store.ts forHydration).
 */
export const FENCE_MARGIN_MS = 500;
/**
 * Reloads one request may make. The first repairs a copy Redis lost; the others happen only
 * while an admin change holds its fence, which lifts within milliseconds (a change that
 * failed half-way holds it until its deadline): after about half a second of waiting the
 * request answers 503 rather than wait longer.
 */
const REPAIR_ATTEMPTS = 6;
const FENCE_POLL_MS = 40;

type Hydrated = 'missing' | 'ready' | 'fenced';

/** A license hash read as [q, u, a, x, n, z, d, f, pl] is missing, fenced (z), or written before packages (no pl). */
const unusable = (copy: (string | null)[]): boolean => copy[0] == null || copy[5] != null || copy[8] == null;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The Redis copy of the licenses: written from Postgres rows (hydration and admin changes,
 * both through sync.lua so they commute) and read back for check-quota and the admin API.
 */
/** What a license's Redis copy holds now: its counts, and the units left of each package it still holds (by number). */
export interface LiveCounts {
  totalQuota: number;
  usedQuota: number;
  packageLeft: ReadonlyMap<number, number>;
}

export class HotLicenses {
  // license key -> firma id never changes once created, so it may be remembered forever
  private readonly firmaIds = new Map<string, string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly store: LicenseStore,
    /** every license key there is: keys not in it are not looked up in Postgres */
    private readonly known: KnownKeys,
    /** how long Redis remembers that Postgres has no such key (UNKNOWN_KEY_CACHE_SECONDS) */
    private readonly unknownKeyMs: number,
    /** calls that must not run on a Redis process not yet verified go through it */
    readonly restarts: RedisRestarts,
  ) {}

  /**
   * Fences both Redis copies of a license before an admin change reaches Postgres
   * (lua/fence.lua): until the change writes them, every request reloads from Postgres.
   * Throws when Redis cannot be fenced: the change must then not be made.
   */
  async fence(firmaId: string, licenseKey: string, deadlineMs: number): Promise<void> {
    await Promise.all([
      runScript(this.redis, scripts.fence(this.keys.forLicense(firmaId).license, deadlineMs)),
      runScript(this.redis, scripts.fence(this.keys.credentials(licenseKey), deadlineMs)),
    ]);
  }

  /**
   * Writes a Postgres row to Redis. `completes`: this is the admin change that fenced the
   * copies. `settledMs`: the row was read after this time (Postgres's clock), so fences
   * whose deadline is older may be lifted. Resolves whether a fence remains.
   */
  async write(row: LicenseRow, completes = false, settledMs = 0): Promise<boolean> {
    const k = this.keys.forLicense(row.firmaId);
    const [, [outcome, licenseFenced], [, credentialsFenced]] = await Promise.all([
      this.redis.del(this.keys.unknownKey(row.licenseKey)),
      runScript(this.redis, scripts.syncLicense(k, row.version, completes, settledMs, updateOf(row), licenseFields(row))),
      runScript(this.redis, scripts.sync(this.keys.credentials(row.licenseKey), row.version, 'none', completes, settledMs, credentialsFields(row))),
    ]);
    this.firmaIds.set(row.licenseKey, row.firmaId);
    this.known.add(row.licenseKey);
    if (outcome !== SyncOutcome.NOT_CREATED) return licenseFenced || credentialsFenced;
    return (await this.createLicenseCopy(row.firmaId, completes, settledMs)) || credentialsFenced;
  }

  /**
   * Creates a license hash Redis does not have. Its counts and packages are what Postgres
   * has written, less what the events still queued in the license's stream did (copyOf):
   * the stream is read first, then Postgres, which says which of those redemptions it counts
   * already (one written in between is counted once; a forfeit written in between marks its
   * package). No event of the license is queued meanwhile, since none can happen without
   * the hash.
   */
  private async createLicenseCopy(firmaId: string, completes: boolean, settledMs: number): Promise<boolean> {
    const k = this.keys.forLicense(firmaId);
    // the process whose stream is read: sync.lua writes the copy there or nowhere
    const readOn = await this.restarts.fenced(() => runScript(this.redis, scripts.here(k)));
    const queued = await this.queuedEvents(k.stream, firmaId);
    const found = await this.store.forHydration(firmaId, [...queued.redemptions.keys()], [...queued.releases.keys()]);
    if (found === null) return false;
    const { row } = found;
    const copy = { ...copyOf(row, queued, found.counted, found.released), readOn };
    const [, fenced] = await runScript(this.redis, scripts.syncLicense(k, row.version, completes, settledMs, copy, licenseFields(row)));
    return fenced;
  }

  /** The license's redemptions, forfeits and releases waiting in its stream (not yet in Postgres, or not yet acknowledged). */
  private async queuedEvents(stream: string, firmaId: string): Promise<Queued> {
    const queued: Queued = { redemptions: new Map(), forfeits: new Map(), releases: new Map() };
    let from = '-';
    for (;;) {
      const page = (await this.redis.xrange(stream, from, '+', 'COUNT', SCAN_PAGE)) as [string, string[]][];
      for (const [, entry] of page) for (const fields of entryEvents(entry)) {
        const redemption = redemptionOf(fields);
        if (redemption?.firmaId === firmaId) queued.redemptions.set(redemption.tokenId, redemption.packageNo);
        const forfeit = redemption === null ? forfeitOf(fields) : null;
        if (forfeit?.firmaId === firmaId) queued.forfeits.set(forfeit.packageNo, forfeit.units);
        const release = redemption === null && forfeit === null ? releaseOf(fields) : null;
        if (release?.firmaId === firmaId) queued.releases.set(release.tokenId, release.packageNo);
      }
      if (page.length < SCAN_PAGE) return queued;
      from = `(${(page[page.length - 1] as [string, string[]])[0]}`;
    }
  }

  /** Reloads one license from Postgres after a Redis miss. */
  private async hydrateFirma(firmaId: string): Promise<Hydrated> {
    const found = await this.store.forHydration(firmaId);
    if (found === null) return 'missing';
    return (await this.write(found.row, false, found.nowMs - FENCE_MARGIN_MS)) ? 'fenced' : 'ready';
  }

  /**
   * After a script found a license's copy missing or fenced: reloads the license from
   * Postgres and runs `step` again, until its result is not a miss (`missed`), waiting a
   * little while an admin change holds the fence. Resolves null when Postgres has no such
   * license; past REPAIR_ATTEMPTS the request is refused with 503. (The first call is the
   * caller's own, so the path where the copy is there allocates nothing for this.)
   */
  async retryAfterMiss<R>(firmaId: string, step: () => Promise<R>, missed: (result: R) => boolean): Promise<R | null> {
    for (let attempt = 0; ; attempt++) {
      if (attempt >= REPAIR_ATTEMPTS) throw new ServiceUnavailable('license copy still fenced by an admin change');
      const state = await this.hydrateFirma(firmaId);
      if (state === 'missing') return null;
      if (state === 'fenced') await sleep(FENCE_POLL_MS);
      const result = await step();
      if (!missed(result)) return result;
    }
  }

  /** The license from Postgres, written to Redis; its absence is remembered there for a while. */
  private async hydrateKey(licenseKey: string): Promise<LicenseRow | null> {
    const row = await this.store.byKey(licenseKey);
    // the credentials come from Postgres itself, whatever state the Redis copy is left in
    if (row) await this.hydrateFirma(row.firmaId);
    else if (this.unknownKeyMs > 0) await this.redis.set(this.keys.unknownKey(licenseKey), '1', 'PX', this.unknownKeyMs);
    return row;
  }

  /**
   * A license key's credentials: from Redis, else from Postgres. For a login attempt (get-token)
   * the same script call takes the attempt's place in its failure budget (lua/credentials.lua).
   * No credentials: no such license; a key that is not among the known keys, or that Redis
   * remembers Postgres did not have, costs no Postgres look-up.
   */
  async credentials(licenseKey: string, attempt: LoginAttempt = LOOK_UP_ONLY): Promise<CredentialsLookup> {
    const call = scripts.credentials(this.keys, licenseKey, attempt);
    let found = await runScript(this.redis, call);
    const none = (rate: RateCount, waitMs = 0): CredentialsLookup => ({ credentials: null, waitMs, rate, trusted: false, gate: NO_GATE });
    if (found.outcome === Outcome.OVER_RATE_LIMIT) return none(found.rate, Math.max(1, found.rate.resetMs));
    if (found.outcome !== Outcome.DONE) {
      // a key this process never heard of is looked up only when Redis holds a hash for it:
      // fenced by an admin change, or of another Redis process (its announcement may be missed)
      if (found.outcome === Outcome.NO_SUCH_LICENSE || (!this.known.has(licenseKey) && !found.hashHeld)) return none(found.rate);
      const row = await this.hydrateKey(licenseKey);
      if (row === null) return none(found.rate);
      // the copy is back: the attempt takes its place as it would have (a copy still fenced: served from the row, ungated)
      if (attempt.keyBudget > 0 || attempt.trustMs > 0) found = await runScript(this.redis, call);
      if (found.outcome === Outcome.OVER_RATE_LIMIT) return none(found.rate, Math.max(1, found.rate.resetMs));
      if (found.outcome !== Outcome.DONE) {
        const credentials = { firmaId: row.firmaId, passwordHash: row.passwordHash, generation: String(row.tokenGeneration) };
        return { credentials, waitMs: 0, rate: found.rate, trusted: false, gate: NO_GATE };
      }
    }
    return { credentials: found, waitMs: 0, rate: found.rate, trusted: found.trusted, gate: found.gate };
  }

  /** Whether a license may have this key: every key that exists is in the process's set (src/licenses/knownKeys.ts), or was created in the last moments. */
  mayExist(licenseKey: string): boolean {
    return this.firmaIds.has(licenseKey) || this.known.has(licenseKey);
  }

  async firmaIdOf(licenseKey: string): Promise<string | null> {
    const known = this.firmaIds.get(licenseKey);
    if (known !== undefined) return known;
    const firmaId = (await this.credentials(licenseKey)).credentials?.firmaId ?? null;
    if (firmaId !== null) this.firmaIds.set(licenseKey, firmaId);
    return firmaId;
  }

  /**
   * The counts and package balances of a license's Redis copy (fenced or not: they are live
   * either way), ahead of Postgres by the worker lag; null: no copy written since packages.
   */
  async liveCounts(firmaId: string): Promise<LiveCounts | null> {
    const call = scripts.peek(this.keys.forLicense(firmaId), true, [L.totalQuota, L.usedQuota, L.forfeitedQuota, L.packageNo, L.packageLeft]);
    const [copy, others] = await this.restarts.fenced(() => runScript(this.redis, call));
    const [q, u, f, pn, pl] = copy;
    if (q == null || u == null || pl == null) return null;
    // the package hash: number -> "expiry ms<TAB>units left" (lua/includes/packages.lua)
    const left = new Map<number, number>();
    for (const [no, entry] of Object.entries(others)) left.set(Number(no), Number(entry.split('\t')[1]));
    if (pn != null && pn !== '') left.set(Number(pn), Number(pl));
    return { totalQuota: Number(q) - Number(f ?? 0), usedQuota: Number(u), packageLeft: left };
  }

  /**
   * Forfeits what the license's expired packages left (lua/settle.lua), reloading the copy
   * first if Redis does not hold it; resolves the units forfeited now.
   */
  async settle(firmaId: string): Promise<number> {
    const step = () => this.restarts.fenced(() => runScript(this.redis, scripts.settle(this.keys.forLicense(firmaId), firmaId, Date.now())));
    const missed = ([outcome]: [Outcome, number]) => outcome === Outcome.COPY_MISSING;
    let settled: [Outcome, number] | null = await step();
    if (missed(settled)) settled = await this.retryAfterMiss(firmaId, step, missed);
    return settled?.[1] ?? 0;
  }

  /** The live license, reloaded if Redis lost it or an admin change fenced it; null when it does not exist. */
  async read(licenseKey: string): Promise<LiveLicense | null> {
    const firmaId = await this.firmaIdOf(licenseKey);
    return firmaId === null ? null : this.readFirma(firmaId, licenseKey);
  }

  /** The live license of a firma id found by its key (as read does); null when it no longer exists. */
  async readFirma(firmaId: string, licenseKey: string): Promise<LiveLicense | null> {
    // the figures a client is shown: read only where the bucket is stamped (lua/peek.lua)
    const call = scripts.peek(this.keys.forLicense(firmaId), false, [L.totalQuota, L.usedQuota, L.isActive, L.expiryMs, L.organizationName,
      L.fences, L.domains, L.forfeitedQuota, L.packageLeft]);
    const readCopy = () => this.restarts.fenced(() => runScript(this.redis, call)).then(([values]) => values);
    let copy: (string | null)[] | null = await readCopy();
    if (unusable(copy)) copy = await this.retryAfterMiss(firmaId, readCopy, unusable);
    if (copy === null) return null;
    const [q, u, a, x, n, , d, f] = copy;
    return {
      firmaId, licenseKey, organizationName: n ?? '', totalQuota: Number(q) - Number(f ?? 0), usedQuota: Number(u), expiryMs: Number(x),
      isActive: a === '1',
      domains: decodeDomains(d ?? ''),
    };
  }
}
