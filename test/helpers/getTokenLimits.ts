import type { Answer } from './http.js';
import type { Harness } from './harness.js';
import { expectRateLimited, type Asserts } from './shapes.js';

// get-token's limits as clients behind addresses see them (test/routes/getToken.limits and
// getToken.limitSettings): a login from an address, counted answers, the issued and the
// held-off answers.

/** A get-token from `address` (an X-Forwarded-For entry; null: none). */
export function loginFrom(h: Harness, address: string | null, licenseKey: string, password: string, imzaTipi = 0): Promise<Answer> {
  const headers: Record<string, string> = address === null ? {} : { 'x-forwarded-for': address };
  return h.request('POST', '/api/v1/auth/get-token', { licenseKey, password, imzaTipi }, headers);
}

export function statusCounts(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

export function expectIssued(t: Asserts, res: Answer, what: string): void {
  t.equal(res.status, 200, `${what}: 200 (${res.text.slice(0, 160)})`);
  t.equal(res.body?.success, true, `${what}: success`);
}

/** A 429 of a failure budget: the published shape, and the budget's policy name in RateLimit-Policy. */
export function expectHeldOff(t: Asserts, res: Answer, policy: 'failed-logins' | 'failed-logins-key', what: string): void {
  expectRateLimited(t, res, what);
  t.match(res.headers.get('ratelimit-policy') ?? '', new RegExp(`^"${policy}";`), `${what}: RateLimit-Policy "${policy}"`);
}
