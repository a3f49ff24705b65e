import { timedCall, type Timed } from '../http.js';
import { claimsOf } from '../jwt.js';
import { getTokenPair, TokenSource } from '../tokens.js';
import { sleep, until } from '../wait.js';
import type { Checks } from './books.js';
import { Load } from './load.js';
import type { FaultLicense, Stack } from './stack.js';

// The probe license, kept out of the load to show that refused calls spend nothing: its four
// public endpoints timed during a Redis fault, checked against the published 503 with
// Retry-After, and the wait until the service serves it again.

export const UNAVAILABLE = 'Hizmet geçici olarak kullanılamıyor';

export const ENDPOINTS = ['validate', 'get-token', 'sign-token', 'check-quota'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

/** A license no load touches: one get-token before the fault, and its sign token kept unused. */
export interface Probe {
  lic: FaultLicense;
  accessToken: string;
  signToken: string;
  tokenId: string;
}

export async function makeProbe(stack: Stack, lic: FaultLicense): Promise<Probe> {
  const { accessToken, signToken } = await getTokenPair(stack.client(), lic);
  return { lic, accessToken, signToken, tokenId: claimsOf(signToken).token_id };
}

/** The four public endpoints of the probe license at once, each timed. */
export async function probeRound(stack: Stack, probe: Probe, timeoutMs = 5000): Promise<Record<Endpoint, Timed>> {
  const base = stack.url();
  const [validate, getToken, signToken, checkQuota] = await Promise.all([
    timedCall(base, 'POST', '/api/license/validate', { token: probe.signToken }, {}, timeoutMs),
    timedCall(base, 'POST', '/api/v1/auth/get-token',
      { licenseKey: probe.lic.licenseKey, password: probe.lic.password, imzaTipi: 0 }, {}, timeoutMs),
    timedCall(base, 'POST', '/api/v1/auth/sign-token', { imzaTipi: 0 }, { authorization: `Bearer ${probe.accessToken}` }, timeoutMs),
    timedCall(base, 'GET', `/api/License/check-quota/${probe.lic.licenseKey}`, undefined, {}, timeoutMs),
  ]);
  return { validate, 'get-token': getToken, 'sign-token': signToken, 'check-quota': checkQuota };
}

/**
 * Waits until the service answers check-quota of a license with 200 (it has reconnected to
 * Redis); resolves with the ms it took, -1 if it did not within timeoutMs.
 */
export async function untilServing(stack: Stack, licenseKey: string, timeoutMs = 10_000): Promise<number> {
  const started = Date.now();
  const serving = await until(async () => {
    const o = (await timedCall(stack.url(), 'GET', `/api/License/check-quota/${licenseKey}`)).outcome;
    return o.kind === 'answer' && o.status === 200;
  }, { timeoutMs, intervalMs: 20 });
  return serving ? Date.now() - started : -1;
}

/** Probe rounds back to back while `during()` holds (a round is started only then). */
export async function probeWhile(stack: Stack, probe: Probe, during: () => boolean): Promise<Record<Endpoint, Timed>[]> {
  const rounds: Record<Endpoint, Timed>[] = [];
  while (during()) {
    rounds.push(await probeRound(stack, probe));
    await sleep(100);
  }
  return rounds;
}

/** What an answer looks like, for a message: status, body with check-quota's timestamp checked and dropped, Retry-After. */
export function seen(timed: Timed): Record<string, unknown> {
  const o = timed.outcome;
  if (o.kind !== 'answer') return { outcome: o.kind };
  const body = o.body !== null && typeof o.body === 'object' ? { ...o.body } : o.body;
  if (body && typeof body === 'object' && 'timestamp' in body) {
    body.timestamp = !Number.isNaN(Date.parse(String(body.timestamp))) ? 'ISO' : body.timestamp;
  }
  return { status: o.status, body, retryAfter: timed.retryAfter };
}

/** The published 503 of each endpoint (validate: message; get-token, sign-token: code; check-quota: code and timestamp). */
export function expected503(endpoint: Endpoint): Record<string, unknown> {
  const coded = { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE } };
  const body = endpoint === 'validate' ? { success: false, message: UNAVAILABLE }
    : endpoint === 'check-quota' ? { ...coded, timestamp: 'ISO' } : coded;
  return { status: 503, body, retryAfter: 'whole seconds >= 1' };
}

/** seen(), with a Retry-After of whole seconds >= 1 written as expected503 writes it. */
export function seen503(timed: Timed): Record<string, unknown> {
  const out = seen(timed);
  if (timed.retryAfter !== null && /^[1-9]\d*$/.test(timed.retryAfter)) out.retryAfter = 'whole seconds >= 1';
  return out;
}

export interface LatencySummary {
  n: number;
  min: number;
  p50: number;
  max: number;
}

export function summarize(values: number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { n: sorted.length, min: sorted[0] ?? NaN, p50: at(0.5), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * Every probe answer of the rounds is the endpoint's published 503 with Retry-After,
 * within maxMs. Returns the latencies per endpoint.
 */
export function check503s(t: Checks, rounds: Record<Endpoint, Timed>[], maxMs: number, when: string): Record<Endpoint, LatencySummary> {
  const out = {} as Record<Endpoint, LatencySummary>;
  for (const endpoint of ENDPOINTS) {
    const all = rounds.map((r) => r[endpoint]);
    const wrong = all.filter((x) => JSON.stringify(seen503(x)) !== JSON.stringify(expected503(endpoint)));
    t.same(wrong.map(seen503), [], `${when}: ${endpoint} answered the published 503 with Retry-After (${all.length} probes)`,
      { expected: expected503(endpoint) });
    const slow = all.filter((x) => x.ms > maxMs).map((x) => x.ms);
    t.same(slow, [], `${when}: ${endpoint} answered within ${maxMs} ms`);
    out[endpoint] = summarize(all.map((x) => x.ms));
  }
  return out;
}

/** What a test saw while Redis was away: the probe rounds and the held tokens' validates. */
export interface Outage {
  /** "paused", "stopped" */
  what: string;
  rounds: Record<Endpoint, Timed>[];
  redemptions: Timed[];
  /** when Redis went away and came back (Date.now()) */
  from: number;
  to: number;
  minRounds: number;
  minRedemptions: number;
}

/**
 * While Redis was away: every probe and every held-token validate answered the published
 * 503 with Retry-After within maxMs, and the load's validates answered nothing else once
 * the first timeout had passed; every refusal of the load was a 503, none unanswered.
 */
export function checkOutage(t: Checks, load: Load, o: Outage, maxMs: number): void {
  t.ok(o.rounds.length >= o.minRounds, `probed every endpoint ${o.rounds.length} times while Redis was ${o.what}`);
  const latencies = check503s(t, o.rounds, maxMs, `Redis ${o.what}`);
  t.ok(o.redemptions.length >= o.minRedemptions, `${o.redemptions.length} validates of held tokens while Redis was ${o.what}`);
  const wrong = o.redemptions.filter((r) => JSON.stringify(seen503(r)) !== JSON.stringify(expected503('validate')));
  t.same(wrong.map(seen503), [], `every validate while Redis was ${o.what} answered the published 503 with Retry-After`);
  const validateMs = summarize(o.redemptions.map((r) => r.ms));
  t.ok(validateMs.max <= maxMs, `every validate while Redis was ${o.what} answered within ${maxMs} ms (${JSON.stringify(validateMs)})`);
  t.comment(`503 latencies while Redis was ${o.what} (ms): probes ${JSON.stringify(latencies)}; held-token validates ${JSON.stringify(validateMs)}`);
  const during = load.timeline.filter((e) => e.at > o.from + maxMs && e.at < o.to);
  t.same(during.filter((e) => e.outcome !== '503'), [], `no validate of the load answered anything but 503 while Redis was ${o.what} (${during.length})`);
  t.same(Object.keys(load.others()).filter((k) => k !== '503'), [], `the load's validate failures were all 503, none unanswered (${JSON.stringify(load.others())})`);
  t.same(Object.keys(load.mintFailures()).filter((k) => k !== '503'), [], `the load's mint failures were all 503, none unanswered (${JSON.stringify(load.mintFailures())})`);
}

/**
 * The setup of a Redis outage scenario: of the stack's licenses the first is the probe
 * (with `held` tokens minted for it and kept out of the load), the others carry the load,
 * started and redeeming before the fault.
 */
export async function probedLoad(stack: Stack, licenses: FaultLicense[], held: number): Promise<{ probe: Probe; held: string[]; load: Load }> {
  const [probeLicense, ...loaded] = licenses;
  if (!probeLicense) throw new Error('no license');
  const probe = await makeProbe(stack, probeLicense);
  const tokens = await new TokenSource(stack.client(), probeLicense).many(held);
  const load = new Load(stack, loaded, { concurrency: 8, timeoutMs: 5000 });
  await load.start();
  await load.waitForOk(200);
  return { probe, held: tokens, load };
}
