import { rawReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { metricsAuthorizer } from '../metrics/endpoint.js';
import type { Metrics } from '../metrics/registry.js';
import { coded, codedErrors } from './replies.js';

const UNAUTHORIZED: Reply = {
  ...coded(401, 'UNAUTHORIZED', 'Metriklere erişim için geçerli bir token gerekli'),
  headers: [['WWW-Authenticate', 'Bearer realm="metrics"']],
};

/**
 * GET /metrics: the Prometheus text (src/metrics/registry.ts). Open on the bound interface
 * unless METRICS_TOKEN is set: then "Authorization: Bearer <METRICS_TOKEN>" (compared in
 * constant time), as Prometheus's bearer_token sends it.
 */
export function metricsRoute(metrics: Metrics, token: string | null): Route {
  const authorized = metricsAuthorizer(token);
  return {
    method: 'get',
    path: '/metrics',
    errors: codedErrors,
    needsAuthorization: token !== null,
    noStore: true,
    async handler(req) {
      if (!authorized(req.authorization)) return UNAUTHORIZED;
      return rawReply(200, await metrics.scrape(), metrics.contentType);
    },
  };
}
