import { RATE_WINDOW_MS } from '../config.js';
import type { Headers, Reply } from '../http/reply.js';
import type { RateLimitDoc } from '../openapi/routeDoc.js';
import type { RateCount } from '../redis/scripts.js';

/**
 * The IETF RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers) of
 * one limit, on every answer the script that counts it gave, 200s included, so clients can
 * pace themselves before a 429:
 *
 *   RateLimit-Policy: "validate";q=100;w=60     the quota per window of seconds
 *   RateLimit: "validate";r=42;t=17             requests left in this window, seconds until it resets
 *
 * The figures come from the same script call that counts the request (RateCount), never
 * from a call of their own. A limit that is off (0) sends neither field.
 */
export class RateLimitFields {
  private readonly policy: readonly [string, string];
  private readonly name: string;

  constructor(private readonly policyName: string, readonly limit: number) {
    this.name = `"${policyName}"`;
    this.policy = ['RateLimit-Policy', `${this.name};q=${limit};w=${RATE_WINDOW_MS / 1000}`];
  }

  /** What /openapi.json says of this limit: its name and figures, and which answers carry the fields. */
  describe(where: Omit<RateLimitDoc, 'policy' | 'limit' | 'policyField'>): RateLimitDoc {
    return { policy: this.policyName, limit: this.limit, policyField: this.policy[1], ...where };
  }

  /** The two fields for what the step counted. */
  headers(rate: RateCount): Headers {
    return [this.policy, ['RateLimit', `${this.name};r=${rate.remaining};t=${Math.max(0, Math.ceil(rate.resetMs / 1000))}`]];
  }

  /** The reply with the fields added (the reply itself when the limit is off, or nothing was counted). */
  on(reply: Reply, rate: RateCount | null): Reply {
    if (this.limit === 0 || rate === null) return reply;
    const fields = this.headers(rate);
    return { status: reply.status, body: reply.body, headers: reply.headers ? [...reply.headers, ...fields] : fields };
  }
}
