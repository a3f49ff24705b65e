import type { Reply } from './scriptCall.js';
import { Outcome, type RateCount, type SyncOutcome } from './outcomes.js';

// What each script answers and how its reply is read: the reply's positions, laid out by
// the script (its "Returns" comment), turned into named fields. One concern: the readers
// are the one place that knows the reply layouts, the builders (./scriptBuilders.ts) hand
// them to their calls, and callers see only the named answers.

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
  /** COPY_MISSING: Redis holds a hash for the key all the same (fenced, or of another Redis process), so the key exists */
  hashHeld: boolean;
}

/** A rendered check-quota answer: its status line and its body up to the timestamp's value (`...,"timestamp":"`). */
export interface QuotaAnswer {
  status: string;
  head: string;
}

/**
 * checkQuota.lua's answer: the copy's version ("" = reload, uncached); on a hit the cached
 * answer and its tag, or (held, answer null) only the word that the caller's tag is the
 * cached answer's; on a miss (answer null, held false) Redis's time to stamp the answer
 * about to be built with; OVER_RATE_LIMIT: wait rate.resetMs
 */
export interface QuotaChecked {
  outcome: Outcome.DONE | Outcome.OVER_RATE_LIMIT;
  rate: RateCount;
  version: string;
  stampMs: number;
  answer: QuotaAnswer | null;
  tag: string;
  held: boolean;
}

/** quotaAnswer.lua's answer: DONE with the answer to serve and its tag; STALE_ANSWER with the copy's version and Redis's time, to read again with */
export interface QuotaStored {
  outcome: Outcome.DONE | Outcome.STALE_ANSWER;
  answer: QuotaAnswer;
  version: string;
  stampMs: number;
  tag: string;
}

export const outcomeOf = (value: unknown): Outcome => Number(value) as Outcome;
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

export function readCredentials(reply: unknown): CredentialsFound {
  const r = reply as Reply;
  const outcome = outcomeOf(r[0]) as CredentialsFound['outcome'];
  return {
    outcome, rate: rateOf(r, 1),
    firmaId: String(r[4] ?? ''), passwordHash: String(r[5] ?? ''), generation: String(r[6] ?? '0'),
    trusted: Number(r[7]) === 1, gate: outcome === Outcome.DONE ? gateOf(r, 8) : NO_GATE,
    hashHeld: outcome === Outcome.COPY_MISSING && Number(r[4]) === 1,
  };
}

/** failures.lua's answer: DONE with the delay (or "wait"), OVER_RATE_LIMIT with the refusal, as one gate. */
export function readFailureGate(reply: unknown): FailureGate {
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

export const readCounted = (reply: unknown): Counted => ({ outcome: outcomeOf((reply as Reply)[0]) as Counted['outcome'], rate: rateOf(reply as Reply, 1) });
/** count.lua's answer: its limit is the caller's own (no license has one of history's). */
export const readCountedPlain = (reply: unknown): Counted => ({
  outcome: outcomeOf((reply as Reply)[0]) as Counted['outcome'], rate: { remaining: Number((reply as Reply)[1]), resetMs: Number((reply as Reply)[2]) },
});

export function readQuotaChecked(reply: unknown): QuotaChecked {
  const r = reply as Reply;
  const status = String(r[6] ?? '');
  const stampMs = Number(r[5]);
  return {
    outcome: outcomeOf(r[0]) as QuotaChecked['outcome'], rate: rateOf(r, 1), version: String(r[4] ?? ''), stampMs,
    answer: status === '' ? null : { status, head: String(r[7] ?? '') }, tag: String(r[8] ?? ''), held: stampMs === -1,
  };
}

export function readQuotaStored(reply: unknown): QuotaStored {
  const r = reply as Reply;
  return {
    outcome: outcomeOf(r[0]) as QuotaStored['outcome'], answer: { status: String(r[1] ?? ''), head: String(r[2] ?? '') },
    version: String(r[3] ?? ''), stampMs: Number(r[4]), tag: String(r[5] ?? ''),
  };
}

export const readSynced = (reply: unknown): [SyncOutcome, boolean] => [Number((reply as Reply)[0]) as SyncOutcome, Number((reply as Reply)[1]) === 1];
