import type { Route } from '../http/server.js';
import { retryHeaders, retrySeconds, STATUS, timestampedCodeShape, type Reply } from '../http/reply.js';
import type { LiveLicense } from '../licenses/hot.js';
import { type ApiContext, RATE_WINDOW_MS } from './context.js';
import type { CachedAnswer } from './quotaCache.js';
import { quotaErrors, type QuotaError, ScriptResult } from './results.js';
import { licenseKeyParam } from './schemas.js';

const DAY_MS = 86_400_000;

export function quotaPercentage(total: number, used: number): number {
  if (total <= 0) return 0;
  return Math.round(((total - used) / total) * 10000) / 100;
}

type Answer = Omit<CachedAnswer, 'expiresAt'>;

function failure(error: QuotaError, extra?: Record<string, unknown>): Answer {
  const [status, message] = quotaErrors[error];
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
    message: 'Kota bilgisi başarıyla getirildi',
  };
  return { status: '200 OK', head: `${JSON.stringify(body).slice(0, -1)},"timestamp":"` };
}

function send(answer: Answer): Reply {
  return { status: answer.status, body: `${answer.head}${new Date().toISOString()}"}`, headers: answer.headers };
}

/** GET /api/License/check-quota/{licenseKey}: public quota lookup, cached per license. */
export function checkQuotaRoute(ctx: ApiContext): Route {
  const limit = ctx.config.rate.checkQuota;
  const invalidKey = failure('INVALID_LICENSE_KEY');

  /** The answer: from the cache without touching Redis (no promise either), else loaded. */
  function current(licenseKey: string): Reply | Promise<Reply> {
    const now = Date.now();
    const cached = ctx.quotaCache.get(licenseKey, now);
    return cached ? send(cached) : load(licenseKey, now);
  }

  async function load(licenseKey: string, now: number): Promise<Reply> {
    const live = await ctx.hot.read(licenseKey);
    const answer = answerFor(licenseKey, live, now);
    // unknown keys are not cached here (Redis remembers them): a spray of random keys
    // must not push real licenses out of the cache
    if (live !== null) ctx.quotaCache.set(licenseKey, answer, now);
    return send(answer);
  }

  async function counted(licenseKey: string): Promise<Reply> {
    const [code, ms] = await ctx.redis.rate(ctx.keys.rateCheckQuota(licenseKey), limit, RATE_WINDOW_MS);
    if (code !== ScriptResult.RATE_LIMITED) return current(licenseKey);
    const seconds = retrySeconds(Number(ms));
    return send({ ...failure('RATE_LIMITED', { retryAfter: seconds }), headers: retryHeaders(seconds) });
  }

  return {
    method: 'get',
    path: '/api/license/check-quota/:licenseKey',
    errors: timestampedCodeShape,
    handler(req) {
      const licenseKey = licenseKeyParam(req.params[0]);
      if (licenseKey === null) return send(invalidKey);
      return limit > 0 ? counted(licenseKey) : current(licenseKey);
    },
  };
}
