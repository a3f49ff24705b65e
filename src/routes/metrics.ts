import { createHash, timingSafeEqual } from 'node:crypto';
import { rawReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { Metrics } from '../metrics/registry.js';
import { coded, codedErrors } from './replies.js';
import { bearer } from './schemas.js';

const UNAUTHORIZED: Reply = {
  ...coded(401, 'UNAUTHORIZED', 'Metriklere erişim için geçerli bir token gerekli'),
  headers: [['WWW-Authenticate', 'Bearer realm="metrics"']],
};

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * GET /metrics: the Prometheus text (src/metrics/registry.ts). Open on the bound interface
 * unless METRICS_TOKEN is set: then "Authorization: Bearer <METRICS_TOKEN>" (compared in
 * constant time), as Prometheus's bearer_token sends it.
 */
export function metricsRoute(metrics: Metrics, token: string | null): Route {
  const expected = token === null ? null : digest(token);
  return {
    method: 'get',
    path: '/metrics',
    errors: codedErrors,
    needsAuthorization: expected !== null,
    noStore: true,
    async handler(req) {
      if (expected !== null) {
        const given = bearer(req.authorization);
        if (given === null || !timingSafeEqual(digest(given), expected)) return UNAUTHORIZED;
      }
      return rawReply(200, await metrics.scrape(), metrics.contentType);
    },
  };
}
