import { Type } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { addressBucket } from '../http/clientAddress.js';
import { HoldBack } from '../http/holdBack.js';
import { retryHeaders, retrySeconds, STATUS, type Headers, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { ServiceUnavailable } from '../errors.js';
import type { LiveLicense } from '../licenses/hot.js';
import { Outcome } from '../redis/outcomes.js';
import { runScript } from '../redis/scriptCall.js';
import { scripts } from '../redis/scriptBuilders.js';
import type { QuotaAnswer } from '../redis/scriptReplies.js';
import { EXAMPLE } from '../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, Percentage, Timestamp, timestampedErrorOf, Uuid } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { HeldAnswers } from './heldAnswers.js';
import { RateLimitFields } from './rateLimitFields.js';
import { INVALID_LICENSE_KEY, quotaPercentage, RATE_MESSAGE, timestampedErrors, timestampNow } from './replies.js';
import { LicenseKey, licenseKeyParam } from './schemas.js';

// ---- check-quota: {success:false, error:{code, message}, timestamp} ---------------------
//        status  code                   message                       extra
const errors = {
  LICENSE_NOT_FOUND: [404, 'Lisans bulunamadı'],
  LICENSE_EXPIRED: [410, 'Lisans süresi dolmuş'], //           data {expiryDate, daysExpired}
  LICENSE_INACTIVE: [403, 'Lisans aktif değil'],
  QUOTA_EXCEEDED: [429, 'İmza kotası doldu'], //                data {remainingQuota 0, totalQuota, usedQuota}
  INVALID_LICENSE_KEY: [400, INVALID_LICENSE_KEY[1]],
  RATE_LIMITED: [429, RATE_MESSAGE], //                         retryAfter, Retry-After (not published)
} as const satisfies Record<string, readonly [number, string]>;

const DAY_MS = 86_400_000;
const FOUND_MESSAGE = 'Kota bilgisi başarıyla getirildi';
/**
 * Reads of the license one request may make after a miss. The second follows an admin
 * change that came between the version's read and the answer's store, or a first read too
 * slow to be stored (lua/quotaAnswer.lua); after it the request answers what it read,
 * uncached, if the license changed again meanwhile, and 503 if it was too slow again
 * (Redis or Postgres are failing), rather than store an answer older than one served.
 */
const MAX_READS = 2;
/**
 * Unknown keys a process answers at once each second; past that, each 404 is held this
 * long first (HoldBack): a client with a mistyped key is answered at once, while a spray
 * of random keys slows itself down instead of taking the core from redemptions.
 */
const UNKNOWN_KEYS_PER_SECOND = 20;
const UNKNOWN_KEY_HOLD_MS = 1_000;
/** License keys whose last answer a process keeps, to be told "unchanged" rather than sent it again (HeldAnswers). */
const HELD_ANSWERS_MAX = 4_096;

/** A rendered answer: status line and body up to the timestamp's value, which is added when it is sent. */
type Answer = QuotaAnswer;

function failure(error: keyof typeof errors, extra?: Record<string, unknown>): Answer {
  const [status, message] = errors[error];
  const body = { success: false, error: { code: error, message }, ...extra };
  return { status: STATUS[status] as string, head: `${JSON.stringify(body).slice(0, -1)},"timestamp":"` };
}

/** The answer for a license as it is now, checked in the published order: unknown, expired, inactive, quota (docs/api.md#check-quota). */
function answerFor(licenseKey: string, live: LiveLicense | null, now: number): Answer {
  if (live === null) return failure('LICENSE_NOT_FOUND');
  const expiryDate = new Date(live.expiryMs).toISOString();
  if (live.expiryMs <= now) {
    return failure('LICENSE_EXPIRED', { data: { expiryDate, daysExpired: Math.floor((now - live.expiryMs) / DAY_MS) } });
  }
  if (!live.isActive) return failure('LICENSE_INACTIVE');
  const remainingQuota = Math.max(0, live.totalQuota - live.usedQuota);
  if (remainingQuota === 0) {
    return failure('QUOTA_EXCEEDED', { data: { remainingQuota: 0, totalQuota: live.totalQuota, usedQuota: live.usedQuota } });
  }
  const body = {
    success: true,
    data: {
      licenseKey, remainingQuota, totalQuota: live.totalQuota, usedQuota: live.usedQuota,
      quotaPercentage: quotaPercentage(live.totalQuota, live.usedQuota), expiryDate, isActive: live.isActive,
      organizationName: live.organizationName,
    },
    message: FOUND_MESSAGE,
  };
  return { status: '200 OK', head: `${JSON.stringify(body).slice(0, -1)},"timestamp":"` };
}

function send(answer: Answer, headers?: Headers, at = timestampNow()): Reply {
  return { status: answer.status, body: `${answer.head}${at}"}`, headers };
}

// ---- the document (/openapi.json): the examples are this file's own answers for one license
const QuotaInfo = Type.Object({
  success: Type.Literal(true),
  data: Type.Object({
    licenseKey: Uuid, remainingQuota: Count, totalQuota: Count, usedQuota: Count, quotaPercentage: Percentage,
    expiryDate: Timestamp, isActive: Type.Literal(true), organizationName: Type.String(),
  }, { additionalProperties: false }),
  message: Type.Literal(FOUND_MESSAGE),
  timestamp: Timestamp,
}, { additionalProperties: false });

const EXAMPLE_NOW = Date.parse(EXAMPLE.now);
/** An answer as the examples show it: stamped with the examples' time, not the start's. */
const example = (answer: Answer, headers?: Headers): Reply => send(answer, headers, EXAMPLE.now);
const exampleLicense: LiveLicense = {
  firmaId: EXAMPLE.firmaId, licenseKey: EXAMPLE.licenseKey, organizationName: EXAMPLE.organizationName,
  totalQuota: EXAMPLE.totalQuota, usedQuota: EXAMPLE.usedQuota, expiryMs: Date.parse(EXAMPLE.expiryDate), isActive: true, domains: [],
};
const exampleOf = (live: Partial<LiveLicense> | null): Reply =>
  example(answerFor(EXAMPLE.licenseKey, live && { ...exampleLicense, ...live }, EXAMPLE_NOW));

const expired = exampleOf({ expiryMs: Date.parse('2026-02-20T00:00:00.000Z') });
const exhausted = exampleOf({ usedQuota: EXAMPLE.totalQuota });
const limited = example(failure('RATE_LIMITED', { retryAfter: 42 }), retryHeaders(42));

/** The answers that carry the RateLimit fields: every one that passed the count (src/openapi/routeDoc.ts RateLimitDoc). */
const LIMIT = {
  per: 'license key and client address', setting: 'RATE_CHECK_QUOTA_PER_MIN',
  // not 400: a key that is no UUID is refused before any look-up
  statuses: {
    200: 'every', 403: 'every', 410: 'every', 429: 'every',
    // a key no license has is answered from the process's set of license keys, uncounted
    404: 'a key the instance knew of whose license Postgres lacks (a key no license has is answered without counting, so a spray of random keys costs no Redis write; past 20 such keys a second per process, each 404 is held about a second first)',
  },
} as const;

const doc: RouteDoc = {
  summary: 'Look up a license\'s remaining quota',
  description: 'Public, for dashboards; consult it before signing. One answer per license for every process of the ' +
    'instance, at most QUOTA_CACHE_SECONDS old and never an older figure after a newer one; an admin change shows on the ' +
    'very next request. Limited to RATE_CHECK_QUOTA_PER_MIN (10) a minute per license key and client address ' +
    '(TRUST_PROXY for X-Forwarded-For), so a stranger who knows a key spends only his own count, not its holder\'s.',
  tags: ['public'],
  auth: 'none',
  params: { licenseKey: { description: 'the license key, a UUID (any case)', schema: LicenseKey } },
  responses: {
    200: { description: 'the license\'s quota', schema: QuotaInfo, examples: [{ summary: 'found', value: bodyOf(exampleOf({})) }] },
    ...errorResponses((bodies) => timestampedErrorOf(bodies), [
      ['the key is not a UUID', example(failure('INVALID_LICENSE_KEY'))],
      ['the license is not active', exampleOf({ isActive: false })],
      ['no license has this key', exampleOf(null)],
      ['the license is past its expiry date', expired, timestampedErrorOf([bodyOf(expired)], {
        data: Type.Object({ expiryDate: Timestamp, daysExpired: Count }, { additionalProperties: false }),
      })],
      ['the quota is used up (QUOTA_EXCEEDED, with data: not a rate limit, no Retry-After)', exhausted, timestampedErrorOf([bodyOf(exhausted)], {
        data: Type.Object({ remainingQuota: Type.Literal(0), totalQuota: Count, usedQuota: Count }, { additionalProperties: false }),
      })],
      ['too many look-ups of this license key from this client address (RATE_LIMITED, with retryAfter as Retry-After)', limited,
        timestampedErrorOf([bodyOf(limited)], { retryAfter: Type.Integer({ minimum: 1 }) })],
    ]),
  },
};

/** GET /api/License/check-quota/{licenseKey}: public quota lookup, one cached answer per license for every process. */
export function checkQuotaRoute(ctx: RouteContext): Route {
  const limit = ctx.config.rate.checkQuota;
  const lifetimeMs = ctx.config.quotaCacheSeconds * 1000;
  const fields = new RateLimitFields('check-quota', limit, true);
  const invalidKey = failure('INVALID_LICENSE_KEY');
  const held = new HeldAnswers(HELD_ANSWERS_MAX);

  /**
   * After a miss: reads the license, renders its answer and stores it (lua/quotaAnswer.lua),
   * serving what the store hands back, which is another process's answer when that one was
   * stored first. Unknown keys are not stored (a spray of random keys must not fill Redis;
   * Redis remembers them apart: UNKNOWN_KEY_CACHE_SECONDS), nor anything with the cache off.
   */
  async function load(licenseKey: string, version: string, stampMs: number, headers: Headers | undefined): Promise<Reply> {
    for (let read = 1; ; read++) {
      const live = await ctx.hot.read(licenseKey);
      const answer = answerFor(licenseKey, live, Date.now());
      if (live === null || lifetimeMs === 0) return send(answer, headers);
      const stored = await runScript(ctx.redis, scripts.quotaAnswer(ctx.keys, licenseKey, version, stampMs, lifetimeMs, answer));
      if (stored.outcome === Outcome.DONE) {
        held.hold(licenseKey, stored.tag, stored.answer);
        return send(stored.answer, headers);
      }
      const changed = stored.version !== version;
      // the copy is fenced (an admin change in flight), or changed twice: this request
      // overlaps the change, and what it read is as good an answer as any
      if (stored.version === '' || (changed && read >= MAX_READS)) return send(answer, headers);
      if (read >= MAX_READS) throw new ServiceUnavailable('check-quota: the license was read too slowly to be cached');
      version = stored.version;
      stampMs = stored.stampMs;
    }
  }

  /**
   * One script call counts the request against the client's limit for the key, reads the
   * license's version and, when cached for that version, the answer (lua/checkQuota.lua),
   * or only that it is the one this process holds.
   */
  async function answer(licenseKey: string, client: string): Promise<Reply> {
    const mine = lifetimeMs > 0 ? held.get(licenseKey) : undefined;
    const checked = await runScript(ctx.redis, scripts.checkQuota(ctx.keys, licenseKey, client, limit, RATE_WINDOW_MS, lifetimeMs > 0, mine?.tag));
    const counted = fields.headers(checked.rate);
    if (checked.outcome === Outcome.DONE) {
      // held: Redis compared the tag this process sent (mine's) with the cached answer's
      if (checked.held && mine !== undefined) return send(mine.answer, counted);
      if (checked.answer === null) return load(licenseKey, checked.version, checked.stampMs, counted);
      held.hold(licenseKey, checked.tag, checked.answer);
      return send(checked.answer, counted);
    }
    const seconds = retrySeconds(checked.rate.resetMs);
    return send(failure('RATE_LIMITED', { retryAfter: seconds }), [...retryHeaders(seconds) ?? [], ...counted ?? []]);
  }

  /**
   * A key not in the process's set of every license key: a spray of random keys must cost
   * no Redis write (a counter per key and address would be one each). Redis is only read,
   * for a license created elsewhere a moment ago whose announcement has not arrived yet;
   * none: 404, uncounted.
   */
  const unknownKeys = new HoldBack(UNKNOWN_KEYS_PER_SECOND, UNKNOWN_KEY_HOLD_MS);
  async function unknown(licenseKey: string, client: string): Promise<Reply> {
    const held = unknownKeys.wait();
    if (held !== null) await held;
    if ((await ctx.hot.firmaIdOf(licenseKey)) !== null) return answer(licenseKey, client);
    return send(failure('LICENSE_NOT_FOUND'));
  }

  return {
    method: 'get',
    path: '/api/license/check-quota/:licenseKey',
    errors: timestampedErrors,
    needsClientAddress: true,
    cors: true,
    doc: { ...doc, rateLimits: [fields.describe(LIMIT)] },
    handler(req) {
      const licenseKey = licenseKeyParam(req.params[0]);
      if (licenseKey === null) return send(invalidKey);
      // counted per key and client, so a stranger who knows the key spends only his own
      // count; an unknown address ("") is counted on the key's own counter, shared by
      // every request without one: no address must not mean no limit
      const client = req.clientAddress === '' ? '' : addressBucket(req.clientAddress);
      return ctx.hot.mayExist(licenseKey) ? answer(licenseKey, client) : unknown(licenseKey, client);
    },
  };
}
