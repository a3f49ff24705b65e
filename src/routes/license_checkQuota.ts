import { Type } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { retryHeaders, retrySeconds, STATUS, type Headers, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { LiveLicense } from '../licenses/hot.js';
import { Outcome, runScript, scripts } from '../redis/scripts.js';
import { EXAMPLE } from '../openapi/examples.js';
import { bodyOf, errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { Count, Percentage, Timestamp, timestampedErrorOf, Uuid } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import type { CachedAnswer } from './quotaCache.js';
import { RateLimitFields } from './rateLimitFields.js';
import { INVALID_LICENSE_KEY, quotaPercentage, RATE_MESSAGE, timestampedErrors } from './replies.js';
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

type Answer = Omit<CachedAnswer, 'expiresAt' | 'version'>;

function failure(error: keyof typeof errors, extra?: Record<string, unknown>): Answer {
  const [status, message] = errors[error];
  const body = { success: false, error: { code: error, message }, ...extra };
  return { status: STATUS[status] as string, head: `${JSON.stringify(body).slice(0, -1)},"timestamp":"` };
}

/** The answer for a license as it is now, in the spec's order of checks. */
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

function send(answer: Answer, headers?: Headers): Reply {
  return { status: answer.status, body: `${answer.head}${new Date().toISOString()}"}`, headers: headers ?? answer.headers };
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

const EXAMPLE_NOW = Date.parse('2026-03-01T09:30:00.000Z');
const exampleLicense: LiveLicense = {
  firmaId: EXAMPLE.firmaId, licenseKey: EXAMPLE.licenseKey, organizationName: EXAMPLE.organizationName,
  totalQuota: EXAMPLE.totalQuota, usedQuota: EXAMPLE.usedQuota, expiryMs: Date.parse(EXAMPLE.expiryDate), isActive: true,
};
const exampleOf = (live: Partial<LiveLicense> | null): Reply =>
  send(answerFor(EXAMPLE.licenseKey, live && { ...exampleLicense, ...live }, EXAMPLE_NOW));

const expired = exampleOf({ expiryMs: Date.parse('2026-02-20T00:00:00.000Z') });
const exhausted = exampleOf({ usedQuota: EXAMPLE.totalQuota });
const limited = send(failure('RATE_LIMITED', { retryAfter: 42 }), retryHeaders(42));

/** The answers that carry the RateLimit fields: every one that passed the count (src/openapi/routeDoc.ts RateLimitDoc). */
const LIMIT = {
  per: 'license key', setting: 'RATE_CHECK_QUOTA_PER_MIN',
  // not 400: a key that is no UUID is refused before any look-up
  statuses: { 200: 'every', 403: 'every', 404: 'every', 410: 'every', 429: 'every' },
} as const;

const doc: RouteDoc = {
  summary: 'Look up a license\'s remaining quota',
  description: 'Public, for dashboards; consult it before signing. Answers are cached per license for QUOTA_CACHE_SECONDS ' +
    '(an admin change shows at once).',
  tags: ['public'],
  auth: 'none',
  params: { licenseKey: { description: 'the license key, a UUID (any case)', schema: LicenseKey } },
  responses: {
    200: { description: 'the license\'s quota', schema: QuotaInfo, examples: [{ summary: 'found', value: bodyOf(exampleOf({})) }] },
    ...errorResponses((bodies) => timestampedErrorOf(bodies), [
      ['the key is not a UUID', send(failure('INVALID_LICENSE_KEY'))],
      ['the license is not active', exampleOf({ isActive: false })],
      ['no license has this key', exampleOf(null)],
      ['the license is past its expiry date', expired, timestampedErrorOf([bodyOf(expired)], {
        data: Type.Object({ expiryDate: Timestamp, daysExpired: Count }, { additionalProperties: false }),
      })],
      ['the quota is used up (QUOTA_EXCEEDED, with data: not a rate limit, no Retry-After)', exhausted, timestampedErrorOf([bodyOf(exhausted)], {
        data: Type.Object({ remainingQuota: Type.Literal(0), totalQuota: Count, usedQuota: Count }, { additionalProperties: false }),
      })],
      ['too many look-ups of this license key (RATE_LIMITED, with retryAfter as Retry-After)', limited,
        timestampedErrorOf([bodyOf(limited)], { retryAfter: Type.Integer({ minimum: 1 }) })],
    ]),
  },
};

/** GET /api/License/check-quota/{licenseKey}: public quota lookup, cached per license. */
export function checkQuotaRoute(ctx: RouteContext): Route {
  const limit = ctx.config.rate.checkQuota;
  const fields = new RateLimitFields('check-quota', limit);
  const invalidKey = failure('INVALID_LICENSE_KEY');

  /** The answer: cached if built from the license's current version, else loaded. */
  function current(licenseKey: string, version: string, headers: Headers | undefined): Reply | Promise<Reply> {
    const now = Date.now();
    const cached = version === '' ? undefined : ctx.quotaCache.get(licenseKey, version, now);
    return cached ? send(cached, headers) : load(licenseKey, version, now, headers);
  }

  /** version: read before the license itself, so an entry is never newer than its stamp */
  async function load(licenseKey: string, version: string, now: number, headers: Headers | undefined): Promise<Reply> {
    const live = await ctx.hot.read(licenseKey);
    const answer = answerFor(licenseKey, live, now);
    // unknown keys are not cached here (Redis remembers them): a spray of random keys
    // must not push real licenses out of the cache
    if (live !== null && version !== '') ctx.quotaCache.set(licenseKey, { ...answer, version }, now);
    return send(answer, headers);
  }

  /** One script call counts the request and reads the license's version (lua/checkQuota.lua). */
  async function answer(licenseKey: string): Promise<Reply> {
    const checked = await runScript(ctx.redis, scripts.checkQuota(ctx.keys, licenseKey, limit, RATE_WINDOW_MS));
    const counted = limit === 0 ? undefined : fields.headers(checked.rate);
    if (checked.outcome === Outcome.DONE) return current(licenseKey, checked.version, counted);
    const seconds = retrySeconds(checked.rate.resetMs);
    return send(failure('RATE_LIMITED', { retryAfter: seconds }), [...retryHeaders(seconds) ?? [], ...counted ?? []]);
  }

  return {
    method: 'get',
    path: '/api/license/check-quota/:licenseKey',
    errors: timestampedErrors,
    cors: true,
    doc: { ...doc, rateLimits: [fields.describe(LIMIT)] },
    handler(req) {
      const licenseKey = licenseKeyParam(req.params[0]);
      if (licenseKey === null) return send(invalidKey);
      return answer(licenseKey);
    },
  };
}
