import { readFileSync } from 'node:fs';
import path from 'node:path';
import { luaDir } from '../paths.js';
import { IDEMPOTENCY_WINDOW_MS, type IdempotencyRecord, type KeySpace, type LicenseKeys } from './keys.js';
import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';

// The Lua scripts (lua/*.lua) as the rest of the service sees them, in one place: what
// each script's outcomes mean, what the letters of the Redis hashes and stream events
// stand for, and one builder per script laying out its KEYS and ARGV. Callers (src/,
// bench/, test/) use these and never lay out a call by hand.

// ---- outcomes ----------------------------------------------------------------------------

/**
 * What happened, one name per state whichever script found it. The scripts read the same
 * names: scriptSource puts them into every script as Lua constants ("-- @include outcomes").
 */
export enum Outcome {
  DONE = 0,
  OVER_RATE_LIMIT = 1,
  /** no marker for a token we signed: Redis lost it, and perhaps its redemption with it */
  MARKER_MISSING = 2,
  /** redeemed already, or issued before a restart that may have lost its redemption (src/redis/restarts.ts) */
  TOKEN_SPENT = 3,
  /** no Redis copy of the license, or one fenced by an admin change (lua/fence.lua): reload from Postgres */
  COPY_MISSING = 4,
  LICENSE_EXPIRED = 5,
  LICENSE_INACTIVE = 6,
  ORIGIN_NOT_ALLOWED = 7,
  NO_QUOTA_LEFT = 8,
  /** Postgres has no such license (said so lately, or just now) */
  NO_SUCH_LICENSE = 9,
  /** the call reached Redis after its deadline and changed nothing (its client had its 503) */
  PAST_DEADLINE = 10,
  /** the token expired before it could be redeemed (found by the caller, never by a script) */
  TOKEN_EXPIRED = 11,
  /** the credentials (an access token, a password hash read) are of an older token generation: a password change or deactivation since */
  TOKEN_REVOKED = 12,
  /** validate: the Idempotency-Key was used with another token */
  IDEMPOTENCY_KEY_REUSED = 13,
  /** check-quota: an answer built from a version no longer current, or read too long ago, to be stored (lua/quotaAnswer.lua): read again */
  STALE_ANSWER = 14,
  /** release: the token was never redeemed (issued only, or unknown) */
  NOT_REDEEMED = 15,
  /** release: the token's unit was given back before */
  ALREADY_RELEASED = 16,
  /** release: past RELEASE_WINDOW_SECONDS after the redemption */
  RELEASE_WINDOW_PASSED = 17,
  /** release: the license's releasesPerDay is 0 */
  RELEASES_OFF = 18,
  /** release: the license's releases of the day are all used */
  RELEASE_ALLOWANCE_USED = 19,
  /** release: the package the unit came from has expired (the unit would only be forfeited) */
  PACKAGE_EXPIRED = 20,
}

/** What a rate-limit step counted (lua/includes/rateLimit.lua): requests the window still allows, ms until it resets; both 0 when the limit is off. */
export interface RateCount {
  remaining: number;
  resetMs: number;
  /**
   * The limit the step applied, where a license may have its own (ownLimit in
   * lua/includes/rateLimit.lua; 0: off, or nothing counted); absent: the deployment's, as
   * the RateLimitFields were made with (src/routes/rateLimitFields.ts).
   */
  limit?: number;
}

/**
 * A script's limit argument that counts nothing, whatever the license's own limit says: a
 * plain look-up, get-token's issuance (counted per key, not per license).
 */
export const NOT_COUNTED = -1;

/** What an answer says of a request no step counted: no RateLimit fields (the limit 0). */
export const NOTHING_COUNTED: RateCount = { remaining: 0, resetMs: 0, limit: 0 };

/** "local DONE = 0" and so on, for the scripts. */
function luaOutcomes(): string {
  return Object.entries(Outcome).filter(([, v]) => typeof v === 'number').map(([k, v]) => `local ${k} = ${v}`).join('\n');
}

/** The constants the scripts share with this code (the "-- @include constants" of a script). */
function luaConstants(): string {
  return `local SIGN_TOKEN_MS = ${SIGN_TOKEN_SECONDS * 1000}\nlocal IDEMPOTENCY_WINDOW_MS = '${IDEMPOTENCY_WINDOW_MS}'`;
}

/** Outcomes of sync.lua, which writes a Postgres row into Redis (NOT_CREATED: no copy, and no used count to make one). */
export const enum SyncOutcome { UNCHANGED = 0, CREATED = 1, UPDATED = 2, NOT_CREATED = 3 }

// ---- Redis hash fields and stream event fields: src/redis/fields.ts ------------------
export { CredentialsField, EVENT_PACKAGE, EVENT_RECEIPT, EVENT_SEPARATOR, EventKind, EventValues, LegacyEventField, LicenseField, Marker, QuotaAnswerField } from './fields.js';

// ---- loading -----------------------------------------------------------------------------

type Args = (string | number)[];
type Reply = (string | number | null)[];
export type ScriptName = 'credentials' | 'failures' | 'loginGranted' | 'checkQuota' | 'quotaAnswer' | 'count' | 'sync' | 'fence' | 'ack' | 'redeem'
  | 'issue' | 'settle' | 'release' | 'peek' | 'here';

/** The scripts as methods of the client (FCALLs of the function library, src/redis/library.ts); every call gives its key count first. */
export type ScriptClient = Record<ScriptName, (numKeys: number, ...keysAndArgs: Args) => Promise<unknown>>;

export const SCRIPT_NAMES: readonly ScriptName[] = [
  'credentials', 'failures', 'loginGranted', 'checkQuota', 'quotaAnswer', 'count', 'sync', 'fence', 'ack', 'redeem', 'issue', 'settle', 'release',
  'peek', 'here',
];
const sources = new Map<string, string>();

/** lua/includes/name.lua, or the outcomes and constants this code shares with the scripts. */
export function includeSource(include: string): string {
  return include === 'outcomes' ? luaOutcomes() : include === 'constants' ? luaConstants()
    : readFileSync(path.join(luaDir, 'includes', `${include}.lua`), 'utf8');
}

/**
 * A script's text with its "-- @include name" lines replaced by lua/includes/name.lua (as
 * BullMQ does). withServer false: without server.lua, which the function library holds once
 * for all its functions.
 */
export function scriptSource(name: string, { withServer = true } = {}): string {
  const id = `${name}:${withServer}`;
  let lua = sources.get(id);
  if (lua === undefined) {
    lua = readFileSync(path.join(luaDir, `${name}.lua`), 'utf8').replace(/^-- @include (\w+)$/gm, (_, include: string) =>
      include === 'server' && !withServer ? '-- (server.lua: at the top of the library)' : includeSource(include));
    sources.set(id, lua);
  }
  return lua;
}

/** One call of a script: its arguments (key count first) and how to read its reply. */
export interface ScriptCall<R> {
  name: ScriptName;
  args: Args;
  read(reply: unknown): R;
}

/** Runs a call on a client the scripts are defined on (src/redis/client.ts). */
export function runScript<R>(client: ScriptClient, call: ScriptCall<R>): Promise<R> {
  return client[call.name](...(call.args as [number, ...Args])).then(call.read);
}

// ---- one builder per script ------------------------------------------------------------

/**
 * Where a get-token attempt stands in a failed-login budget (lua/includes/slowDown.lua):
 * delayMs >= 0: its place is taken, go after that long; refusedMs > 0: refused, nothing
 * taken, try again after that long; waiting: every free place is held by attempts still
 * being checked, nothing taken, ask again. budget: what the RateLimit fields say of it.
 */
export interface FailureGate {
  delayMs: number;
  refusedMs: number;
  waiting: boolean;
  budget: RateCount;
}

/** No budget was consulted (a plain look-up, or every failure budget off). */
export const NO_GATE: FailureGate = { delayMs: 0, refusedMs: 0, waiting: false, budget: { remaining: 0, resetMs: 0 } };

/** slowDown.lua's delay when every free place is pending. */
const WAIT = 'wait';

/** credentials.lua's answer: DONE with the credentials (generation "0" when the copy has none); OVER_RATE_LIMIT: wait rate.resetMs */
export interface CredentialsFound {
  outcome: Outcome.DONE | Outcome.OVER_RATE_LIMIT | Outcome.COPY_MISSING | Outcome.NO_SUCH_LICENSE;
  rate: RateCount;
  firmaId: string;
  passwordHash: string;
  generation: string;
  /** the client's address got a token for this key within the trust window */
  trusted: boolean;
  /** the failure budget the attempt was held to: the key's, or (trusted) the key's at this address */
  gate: FailureGate;
}

/** What credentials.lua is asked beyond the look-up (every field 0 or "": a plain look-up). */
export interface LoginAttempt {
  /** tokens per window (RATE_GET_TOKEN_PER_MIN; 0: off) unless the license has its own; NOT_COUNTED: not read */
  tokensLimit: number;
  windowMs: number;
  /** the client's address bucket ("" = unknown) */
  address: string;
  /** failures per window at one key (0: no budget) */
  keyBudget: number;
  trustMs: number;
  /** the longest an attempt is held for its turn (GET_TOKEN_MAX_DELAY_MS) */
  maxDelayMs: number;
  /** ms this attempt has waited for places held by attempts still being checked: it is held at most maxDelayMs less this */
  waitedMs: number;
  /** the address is refused for now (known to this process): an untrusted attempt is refused without taking the key's budget */
  addressRefused: boolean;
  /** the attempt's id: the name of the places it takes while its password is checked */
  id: string;
  /** how long a place may stay pending: past it, its attempt is taken for gone and the place for a failure */
  pendingMs: number;
  /** take a place even when every free one is pending (the attempt has waited long enough) */
  force: boolean;
}

/** A look-up that counts nothing (check-quota and history find a key's firma id). */
export const LOOK_UP_ONLY: LoginAttempt = {
  tokensLimit: NOT_COUNTED, windowMs: 60_000, address: '', keyBudget: 0, trustMs: 0, maxDelayMs: 0, addressRefused: false,
  id: '', pendingMs: 0, force: false, waitedMs: 0,
};

/** A rendered check-quota answer: its status line and its body up to the timestamp's value (`...,"timestamp":"`). */
export interface QuotaAnswer {
  status: string;
  head: string;
}

/**
 * checkQuota.lua's answer: the copy's version ("" = reload, uncached); on a hit the cached
 * answer, on a miss (answer null) Redis's time to stamp the answer about to be built with;
 * OVER_RATE_LIMIT: wait rate.resetMs
 */
export interface QuotaChecked {
  outcome: Outcome.DONE | Outcome.OVER_RATE_LIMIT;
  rate: RateCount;
  version: string;
  stampMs: number;
  answer: QuotaAnswer | null;
}

/** quotaAnswer.lua's answer: DONE with the answer to serve; STALE_ANSWER with the copy's version and Redis's time, to read again with */
export interface QuotaStored {
  outcome: Outcome.DONE | Outcome.STALE_ANSWER;
  answer: QuotaAnswer;
  version: string;
  stampMs: number;
}

const outcomeOf = (value: unknown): Outcome => Number(value) as Outcome;
/** A rate count from position `at`: remaining, reset ms, the limit applied. */
const rateOf = (r: Reply, at: number): RateCount => ({ remaining: Number(r[at]), resetMs: Number(r[at + 1]), limit: Number(r[at + 2]) });

/** A slow-down budget's answer from position `at`: delay (< 0: refused for -delay ms; "wait"; "": no budget), remaining, ms until whole. */
function gateOf(r: Reply, at: number): FailureGate {
  if (r[at] === '' || r[at] == null) return NO_GATE;
  const budget = { remaining: Number(r[at + 1]), resetMs: Number(r[at + 2]) };
  if (r[at] === WAIT) return { delayMs: 0, refusedMs: 0, waiting: true, budget };
  const delay = Number(r[at]);
  return delay < 0 ? { delayMs: 0, refusedMs: Math.max(1, -delay), waiting: false, budget } : { delayMs: delay, refusedMs: 0, waiting: false, budget };
}

function readCredentials(reply: unknown): CredentialsFound {
  const r = reply as Reply;
  const outcome = outcomeOf(r[0]) as CredentialsFound['outcome'];
  return {
    outcome, rate: rateOf(r, 1),
    firmaId: String(r[4] ?? ''), passwordHash: String(r[5] ?? ''), generation: String(r[6] ?? '0'),
    trusted: Number(r[7]) === 1, gate: outcome === Outcome.DONE ? gateOf(r, 8) : NO_GATE,
  };
}

/** failures.lua's answer: DONE with the delay (or "wait"), OVER_RATE_LIMIT with the refusal, as one gate. */
function readFailureGate(reply: unknown): FailureGate {
  const r = reply as Reply;
  return outcomeOf(r[0]) === Outcome.OVER_RATE_LIMIT
    ? { delayMs: 0, refusedMs: Math.max(1, Number(r[1])), waiting: false, budget: { remaining: Number(r[2]), resetMs: Number(r[3]) } }
    : gateOf(r, 1);
}

/** loginGranted.lua's answer: DONE or OVER_RATE_LIMIT, and what the tokens-issued counter says. */
export interface LoginGranted {
  outcome: Outcome.DONE | Outcome.OVER_RATE_LIMIT;
  rate: RateCount;
}

/** count.lua's answer: DONE (within the limit) or OVER_RATE_LIMIT (wait rate.resetMs), and what the counter says. */
export interface Counted {
  outcome: Outcome.DONE | Outcome.OVER_RATE_LIMIT;
  rate: RateCount;
}

const readCounted = (reply: unknown): Counted => ({ outcome: outcomeOf((reply as Reply)[0]) as Counted['outcome'], rate: rateOf(reply as Reply, 1) });
/** count.lua's answer: its limit is the caller's own (no license has one of history's). */
const readCountedPlain = (reply: unknown): Counted => ({
  outcome: outcomeOf((reply as Reply)[0]) as Counted['outcome'], rate: { remaining: Number((reply as Reply)[1]), resetMs: Number((reply as Reply)[2]) },
});

function readQuotaChecked(reply: unknown): QuotaChecked {
  const r = reply as Reply;
  const status = String(r[6] ?? '');
  return {
    outcome: outcomeOf(r[0]) as QuotaChecked['outcome'], rate: rateOf(r, 1), version: String(r[4] ?? ''), stampMs: Number(r[5]),
    answer: status === '' ? null : { status, head: String(r[7] ?? '') },
  };
}

function readQuotaStored(reply: unknown): QuotaStored {
  const r = reply as Reply;
  return {
    outcome: outcomeOf(r[0]) as QuotaStored['outcome'], answer: { status: String(r[1] ?? ''), head: String(r[2] ?? '') },
    version: String(r[3] ?? ''), stampMs: Number(r[4]),
  };
}

/** One release (lua/release.lua). */
export interface Release {
  markers: string;
  /** the day's release counter of the license, and when it expires */
  today: { key: string; expiresAt: number };
  nowMs: number;
  tokenId: string;
  firmaId: string;
  windowMs: number;
  /** "" = none given */
  reason: string;
  idempotency: IdempotencyRecord | null;
}

/** A package as a license hash is created with (lua/sync.lua): its number, expiry and units left. */
export interface PackageCopy {
  no: number;
  expiresMs: number;
  left: number;
}

/**
 * What a license hash holds beyond the row's fields: the counts it is created with (usedQuota
 * 'unknown': create nothing), and its packages with units left (on an update only those
 * numbered above what Redis holds are added, full).
 */
export interface LicenseCopy {
  usedQuota: number | 'unknown';
  /** units given back so far (licenses.released_quota and the releases still queued) */
  releasedQuota: number;
  forfeitedQuota: number;
  packagesMade: number;
  packages: PackageCopy[];
  /** the run id of the Redis process whose usage stream the counts were computed from (lua/here.lua); none: no stream read */
  readOn?: string;
}

const readSynced = (reply: unknown): [SyncOutcome, boolean] => [Number((reply as Reply)[0]) as SyncOutcome, Number((reply as Reply)[1]) === 1];

export const scripts = {
  /** lua/credentials.lua: the key's credentials and, for a login attempt, its place in a failure budget (LOOK_UP_ONLY: nothing counted) */
  credentials: (keys: KeySpace, licenseKey: string, a: LoginAttempt): ScriptCall<CredentialsFound> => ({
    name: 'credentials',
    args: [8, keys.credentials(licenseKey), keys.rateGetToken(licenseKey), keys.unknownKey(licenseKey), keys.keyFailures(licenseKey),
      keys.pairFailures(licenseKey, a.address), keys.trustedAddresses(licenseKey),
      keys.pendingOf(keys.keyFailures(licenseKey)), keys.pendingOf(keys.pairFailures(licenseKey, a.address)),
      a.tokensLimit, a.windowMs, a.address, a.keyBudget, a.trustMs, a.maxDelayMs, a.addressRefused ? '1' : '0',
      a.id, a.pendingMs, a.force ? '1' : '0', a.waitedMs],
    read: readCredentials,
  }),

  /** lua/loginGranted.lua: the password checked out: the token counted, the failure place given back, the address trusted */
  loginGranted: (keys: KeySpace, licenseKey: string, a: LoginAttempt, trusted: boolean, mostTrusted: number): ScriptCall<LoginGranted> => {
    const budget = trusted ? keys.pairFailures(licenseKey, a.address) : keys.keyFailures(licenseKey);
    return {
      name: 'loginGranted',
      args: [5, keys.rateGetToken(licenseKey), budget, keys.trustedAddresses(licenseKey), keys.credentials(licenseKey), keys.pendingOf(budget),
        a.tokensLimit, a.windowMs, a.keyBudget, a.address, a.trustMs, mostTrusted, a.id],
      read: readCounted,
    };
  },

  /** lua/count.lua: one request counted against a limit (> 0) on its counter, and nothing else (history) */
  count: (counter: string, limit: number, windowMs: number): ScriptCall<Counted> => ({
    name: 'count', args: [1, counter, limit, windowMs], read: readCountedPlain,
  }),

  /**
   * lua/failures.lua: a place in a failed-login budget (a client address's: KeySpace.failures) for the attempt,
   * pending until it is settled or given back; the refusal; or "wait" (every free place pending)
   */
  takeFailure: (keys: KeySpace, budgetKey: string, budget: number, windowMs: number, deadlineMs: number,
    a: Pick<LoginAttempt, 'maxDelayMs' | 'waitedMs' | 'id' | 'pendingMs' | 'force'>): ScriptCall<FailureGate> => ({
    name: 'failures',
    args: [2, budgetKey, keys.pendingOf(budgetKey), 'take', budget, windowMs, a.maxDelayMs, deadlineMs, a.id, a.pendingMs, a.force ? '1' : '0', a.waitedMs],
    read: readFailureGate,
  }),

  /** lua/failures.lua: the attempt's place given back ('give': it succeeded, or was not made) or kept as a failure ('fail') */
  endFailure: (keys: KeySpace, budgetKey: string, op: 'give' | 'fail', budget: number, windowMs: number, attemptId: string): ScriptCall<FailureGate> => ({
    name: 'failures', args: [2, budgetKey, keys.pendingOf(budgetKey), op, budget, windowMs, 0, 0, attemptId, 0, '0', 0], read: readFailureGate,
  }),

  /**
   * lua/checkQuota.lua: check-quota's rate limit for one client (its address bucket, "" when
   * unknown), the version of the license's copy and, when cached is true, the answer cached for it
   */
  checkQuota: (keys: KeySpace, licenseKey: string, client: string, limit: number, windowMs: number, cached: boolean): ScriptCall<QuotaChecked> => ({
    name: 'checkQuota',
    args: [3, keys.rateCheckQuota(licenseKey, client), keys.credentials(licenseKey), keys.quotaAnswer(licenseKey), limit, windowMs, cached ? '1' : '0'],
    read: readQuotaChecked,
  }),

  /** lua/quotaAnswer.lua: stores an answer built from `version`, stamped stampMs (Redis's clock), for lifetimeMs; or hands back the one to serve */
  quotaAnswer: (keys: KeySpace, licenseKey: string, version: string, stampMs: number, lifetimeMs: number, answer: QuotaAnswer): ScriptCall<QuotaStored> => ({
    name: 'quotaAnswer',
    args: [2, keys.credentials(licenseKey), keys.quotaAnswer(licenseKey), version, stampMs, lifetimeMs, answer.status, answer.head],
    read: readQuotaStored,
  }),

  /** lua/fence.lua: fences a copy (license or credentials hash) until deadlineMs; resolves the changes in flight */
  fence: (hash: string, deadlineMs: number): ScriptCall<number> => ({ name: 'fence', args: [1, hash, deadlineMs], read: Number }),

  /**
   * lua/sync.lua: writes a row's fields. usedQuota: the count to create the license hash
   * with; 'unknown' creates nothing (NOT_CREATED); 'none' for the credentials hash.
   * completes: the admin change that fenced the copy; settledMs: the row was read after
   * this (Postgres's clock), so older fences may lift. Resolves [outcome, still fenced].
   */
  sync: (
    hash: string, version: number, usedQuota: number | 'unknown' | 'none', completes: boolean, settledMs: number, fields: Args,
  ): ScriptCall<[SyncOutcome, boolean]> => ({
    name: 'sync',
    args: [1, hash, version, usedQuota === 'unknown' ? '' : usedQuota === 'none' ? '-' : usedQuota, completes ? '1' : '0', settledMs, '', '', '', ...fields],
    read: readSynced,
  }),

  /**
   * lua/sync.lua for a license hash: as sync, with its packages (LicenseCopy). The counts and
   * units left are used only when the hash is created; usedQuota 'unknown' creates nothing.
   */
  syncLicense: (keys: LicenseKeys, version: number, completes: boolean, settledMs: number, copy: LicenseCopy, fields: Args): ScriptCall<[SyncOutcome, boolean]> => ({
    name: 'sync',
    args: [4, keys.license, keys.packages, keys.stamp, keys.floor, version,
      copy.usedQuota === 'unknown' ? '' : `${copy.usedQuota}:${copy.releasedQuota}${copy.readOn === undefined ? '' : `@${copy.readOn}`}`,
      completes ? '1' : '0', settledMs, copy.forfeitedQuota, copy.packages.map((p) => `${p.no}\t${p.expiresMs}\t${p.left}`).join('\n'), copy.packagesMade, ...fields],
    read: readSynced,
  }),

  /** lua/here.lua: the run id of the Redis process holding the license's bucket, which must be stamped with it (else NEWSERVER) */
  here: (keys: LicenseKeys): ScriptCall<string> => ({ name: 'here', args: [1, keys.stamp], read: String }),

  /**
   * lua/release.lua: gives a redeemed token's unit back to its package, within windowMs of
   * the redemption and the license's daily allowance; resolves the outcome and, DONE, the
   * license's used and remaining quota.
   */
  release: (keys: LicenseKeys, r: Release): ScriptCall<[Outcome, number, number]> => ({
    name: 'release',
    args: [r.idempotency === null ? 7 : 9, keys.license, r.markers, keys.packages, keys.stream, r.today.key,
      ...(r.idempotency === null ? [] : [r.idempotency.current, r.idempotency.previous]), keys.epoch, keys.stamp,
      r.nowMs, r.tokenId, r.firmaId, r.windowMs, r.reason, r.idempotency?.field ?? '', r.today.expiresAt],
    read: (reply) => [outcomeOf((reply as Reply)[0]), Number((reply as Reply)[1]), Number((reply as Reply)[2])],
  }),

  /**
   * lua/peek.lua: fields of a license's copy and, withPackages, its package hash, read only on
   * the Redis process its bucket is stamped with (else NEWSERVER: src/redis/restarts.ts)
   */
  peek: (keys: LicenseKeys, withPackages: boolean, fields: string[]): ScriptCall<[(string | null)[], Record<string, string>]> => ({
    name: 'peek',
    args: [3, keys.license, keys.packages, keys.stamp, withPackages ? '1' : '0', ...fields],
    read: (reply) => {
      const [values, flat] = reply as [(string | null)[], string[]];
      const packages: Record<string, string> = {};
      for (let i = 0; i + 1 < flat.length; i += 2) packages[flat[i] as string] = flat[i + 1] as string;
      return [values, packages];
    },
  }),

  /** lua/settle.lua: forfeits what the license's expired packages left; resolves the outcome (DONE, COPY_MISSING) and the units forfeited */
  settle: (keys: LicenseKeys, firmaId: string, nowMs: number): ScriptCall<[Outcome, number]> => ({
    name: 'settle',
    args: [4, keys.license, keys.packages, keys.stream, keys.stamp, nowMs, firmaId],
    read: (reply) => [outcomeOf((reply as Reply)[0]), Number((reply as Reply)[1])],
  }),

  /**
   * lua/ack.lua: acknowledges a written batch's entries of one stream and trims
   * the stream of what no consumer holds; drops the copies of licenses of the stream's slot
   * (their hashes: KeySpace.licenseHash) whose counts are below Postgres's ("<used + released>:<released>"),
   * and those given '-' whatever they hold. Resolves how many copies were dropped.
   */
  ack: (stream: string, group: string, ids: string[], licenses: string[], floors: string[], usedQuotas: string[]): ScriptCall<number> => ({
    name: 'ack',
    args: [1 + 2 * licenses.length, stream, ...licenses, ...floors, group, ids.length, ...ids, ...usedQuotas],
    read: Number,
  }),
};

// ---- the batch scripts: redeem.lua and issue.lua -----------------------------------------

/** What a batch script is called about: one token of a license, whose bucket is its hash slot. */
export interface SlotItem {
  keys: LicenseKeys;
}

/** One redemption (lua/includes/redeemToken.lua). */
export interface Redemption extends SlotItem {
  markers: string;
  /** rate limit per window (0: off) unless the license has its own; NOT_COUNTED: not counted */
  limit: number;
  /** origin host, normalised ("" = none) */
  host: string;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  iatMs: number;
  /** the origin as sent, or null */
  origin: string | null;
  /** its Idempotency-Key's record (LicenseKeys.idempotency), or null: sent without one */
  idempotency: IdempotencyRecord | null;
  /** sign: the receipt's payload up to its documents, which the script completes (src/routes/receipt.ts); "" for validate */
  receiptPrefix: string;
}

/** One issuance (lua/includes/issueToken.lua). */
export interface Issuance extends SlotItem {
  markers: string;
  markersExpireAt: number;
  /** rate limit per window (0: off) unless the license has its own; NOT_COUNTED: not counted (get-token) */
  limit: number;
  tokenId: string;
  firmaId: string;
  imzaTipi: number;
  expMs: number;
  /** the token generation of the caller's credentials, checked against the license's; "" = not checked */
  generation: string;
}

/** DONE: used, remaining; OVER_RATE_LIMIT: ms to wait; then what the rate-limit step counted and the limit it applied; then a sign's receipt (DONE; else "") */
export type Redeemed = [outcome: Outcome, a: number, b: number, rateRemaining: number, rateResetMs: number, rateLimit: number, receipt: string];
/** DONE: remaining quota, organization name; OVER_RATE_LIMIT: ms to wait; then what the rate-limit step counted and the limit it applied */
export type Issued = [outcome: Outcome, a: number, b: string, rateRemaining: number, rateResetMs: number, rateLimit: number];

/**
 * A batch script's layout (lua/includes/batch.lua): KEYS = the slot's stream and epoch,
 * then four per item, then the extra keys some items name; ARGV = now, rate window,
 * deadline, then the item's arguments; `width` values back per item, in order.
 */
export interface BatchLayout<T extends SlotItem, R> {
  name: 'redeem' | 'issue';
  /** values per item in the reply (eachToken's width) */
  width: 6 | 7;
  pushKeys(into: Args, item: T): void;
  /** keys beyond the four, pushed after every item's four */
  pushExtraKeys?(into: Args, item: T): void;
  pushArgs(into: Args, item: T): void;
  /** item i's result, read from the reply */
  result(reply: Reply, i: number): R;
}

export const redeemLayout: BatchLayout<Redemption, Redeemed> = {
  name: 'redeem',
  width: 7,
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateValidate, r.keys.packages),
  pushExtraKeys: (into, r) => {
    if (r.idempotency !== null) into.push(r.idempotency.current, r.idempotency.previous);
  },
  pushArgs: (into, r) => into.push(r.limit, r.host, r.tokenId, r.firmaId, r.imzaTipi, r.iatMs, r.origin === null ? '' : `+${r.origin}`,
    r.idempotency === null ? '' : r.idempotency.field, r.receiptPrefix),
  result: (out, i) => [outcomeOf(out[7 * i]), Number(out[7 * i + 1]), Number(out[7 * i + 2]),
    Number(out[7 * i + 3]), Number(out[7 * i + 4]), Number(out[7 * i + 5]), String(out[7 * i + 6] ?? '')],
};

export const issueLayout: BatchLayout<Issuance, Issued> = {
  name: 'issue',
  width: 6,
  pushKeys: (into, r) => into.push(r.keys.license, r.markers, r.keys.rateSign, r.keys.packages),
  pushArgs: (into, r) => into.push(r.limit, r.tokenId, r.firmaId, r.imzaTipi, r.expMs, r.markersExpireAt, r.generation),
  result: (out, i) => [outcomeOf(out[6 * i]), Number(out[6 * i + 1]), String(out[6 * i + 2] ?? ''),
    Number(out[6 * i + 3]), Number(out[6 * i + 4]), Number(out[6 * i + 5])],
};

/** The arguments of a batch script's call (key count first) for `count` items of one slot, item(i) giving each. */
export function batchArgs<T extends SlotItem>(
  layout: BatchLayout<T, unknown>, count: number, item: (i: number) => T, nowMs: number, windowMs: number, deadlineMs: number,
): Args {
  const first = item(0).keys;
  const args: Args = [0, first.stream, first.epoch];
  for (let i = 0; i < count; i++) layout.pushKeys(args, item(i));
  if (layout.pushExtraKeys) for (let i = 0; i < count; i++) layout.pushExtraKeys(args, item(i));
  args.push(first.stamp);
  args[0] = args.length - 1;
  args.push(nowMs, windowMs, deadlineMs);
  for (let i = 0; i < count; i++) layout.pushArgs(args, item(i));
  return args;
}

const PAST_DEADLINE_REPLY: Reply = [Outcome.PAST_DEADLINE, 0, 0, 0, 0, 0, ''];

/** Item i's result in a batch script's reply of `count` items; a reply shorter than `width` per item came too late. */
export function batchResult<R>(layout: Pick<BatchLayout<never, R>, 'result' | 'width'>, reply: unknown, i: number, count: number): R {
  const out = reply as Reply;
  return out.length < count * layout.width ? layout.result(PAST_DEADLINE_REPLY, 0) : layout.result(out, i);
}

/** A batch script's call for items of one slot (bench/ and test/ use it; SlotBatcher uses the two parts above). */
export function batchCall<T extends SlotItem, R>(
  layout: BatchLayout<T, R>, items: readonly T[], nowMs: number, windowMs: number, deadlineMs: number,
): ScriptCall<R[]> {
  return {
    name: layout.name,
    args: batchArgs(layout, items.length, (i) => items[i] as T, nowMs, windowMs, deadlineMs),
    read: (reply) => items.map((_, i) => batchResult(layout, reply, i, items.length)),
  };
}
