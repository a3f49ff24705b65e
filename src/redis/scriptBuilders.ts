import type { IdempotencyRecord, KeySpace, LicenseKeys } from './keys.js';
import { NOT_COUNTED, type Outcome, type SyncOutcome } from './outcomes.js';
import type { Args, Reply, ScriptCall } from './scriptCall.js';
import {
  outcomeOf, readCounted, readCountedPlain, readCredentials, readFailureGate, readQuotaChecked, readQuotaStored, readSynced,
  type Counted, type CredentialsFound, type FailureGate, type LoginGranted, type QuotaAnswer, type QuotaChecked, type QuotaStored,
} from './scriptReplies.js';

// One builder per script called for one key or license (the batch scripts, redeem.lua and
// issue.lua, are laid out in ./batchScripts.ts), laying out its KEYS and ARGV, and what each
// is asked beyond its keys. One concern: callers (src/, bench/, test/) take a call from the
// `scripts` table and never lay one out by hand.

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
   * unknown), the version of the license's copy and, when cached is true, the answer cached for
   * it, or only that it is the one of heldTag, which the caller holds ("" none)
   */
  checkQuota: (
    keys: KeySpace, licenseKey: string, client: string, limit: number, windowMs: number, cached: boolean, heldTag = '',
  ): ScriptCall<QuotaChecked> => ({
    name: 'checkQuota',
    args: [3, keys.rateCheckQuota(licenseKey, client), keys.credentials(licenseKey), keys.quotaAnswer(licenseKey), limit, windowMs, cached ? '1' : '0', heldTag],
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
    args: [r.idempotency === null ? 7 : 10, keys.license, r.markers, keys.packages, keys.stream, r.today.key,
      ...(r.idempotency === null ? [] : [r.idempotency.current, r.idempotency.previous, r.idempotency.later]), keys.epoch, keys.stamp,
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

  /**
   * lua/bury.lua: keeps refused events (five values each: stream, entry id, error, code,
   * fields as JSON) as dead letters, skipping one already among the last `window` kept;
   * resolves how many were added.
   */
  bury: (deadLetters: string, window: number, refused: string[]): ScriptCall<number> => ({
    name: 'bury',
    args: [1, deadLetters, window, ...refused],
    read: Number,
  }),
};
