import { RATE_WINDOW_MS } from '../config.js';
import type { Headers, Reply } from '../http/reply.js';
import type { RateLimitDoc } from '../openapi/routeDoc.js';
import type { RateCount } from '../redis/outcomes.js';

/**
 * The IETF RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers) of
 * one limit, on every answer the script that counts it gave, 200s included, so clients can
 * pace themselves before a 429:
 *
 *   RateLimit-Policy: "validate";q=100;w=60     the quota per window of seconds
 *   RateLimit: "validate";r=42;t=17             requests left in this window, seconds until it resets
 *
 * The figures come from the same script call that counts the request (RateCount), never
 * from a call of their own, and so does the limit where a license may have its own
 * (RateCount.limit): the policy is the one this license is held to. A limit that is off (0)
 * sends neither field.
 */
export class RateLimitFields {
  private readonly policy: readonly [string, string];
  private readonly name: string;

  /** perLicense: a license may have its own limit (the scripts' RateCount.limit), which its answers then show */
  constructor(private readonly policyName: string, readonly limit: number, private readonly perLicense = false) {
    this.name = `"${policyName}"`;
    this.policy = ['RateLimit-Policy', `${this.name};q=${limit};w=${RATE_WINDOW_MS / 1000}`];
  }

  /** What /openapi.json says of this limit: its name and figures, and which answers carry the fields. */
  describe(where: Omit<RateLimitDoc, 'policy' | 'limit' | 'policyField'>): RateLimitDoc {
    return { policy: this.policyName, limit: this.limit, policyField: this.policy[1], ...(this.perLicense ? { perLicense: true } : {}), ...where };
  }

  /** The two fields for what the step counted (none when its limit is off: the license's own, or the deployment's). */
  headers(rate: RateCount): Headers | undefined {
    const limit = rate.limit ?? this.limit;
    if (limit === 0) return undefined;
    const policy = limit === this.limit ? this.policy : ['RateLimit-Policy', `${this.name};q=${limit};w=${RATE_WINDOW_MS / 1000}`] as const;
    return [policy, ['RateLimit', `${this.name};r=${rate.remaining};t=${Math.max(0, Math.ceil(rate.resetMs / 1000))}`]];
  }

  /** The reply with the fields added (the reply itself when the limit is off, or nothing was counted). */
  on(reply: Reply, rate: RateCount | null): Reply {
    if (rate === null) return reply;
    const fields = this.headers(rate);
    if (fields === undefined) return reply;
    return { status: reply.status, body: reply.body, headers: reply.headers ? [...reply.headers, ...fields] : fields };
  }
}
