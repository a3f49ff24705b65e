import { rawReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { metricsAuthorizer } from '../metrics/endpoint.js';
import type { Metrics } from '../metrics/registry.js';
import { Type } from '@sinclair/typebox';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf } from '../openapi/schemas.js';
import { coded, codedErrors } from './replies.js';

const doc: RouteDoc = {
  summary: 'Prometheus metrics of this instance',
  description: 'Prometheus text format (README "Metrics": the metric names). Open on the bound interface unless METRICS_TOKEN '
    + 'is set. With METRICS=0 nothing is recorded and this route is not served (404). A scrape never waits on Redis for more '
    + 'than a second (the gauges it cannot read are NaN), so it never answers 503.',
  tags: ['operations'],
  auth: 'none',
  neverUnavailable: true,
  responses: {
    200: {
      description: 'the metrics, Prometheus text format 0.0.4',
      contentType: 'text/plain',
      schema: Type.String(),
      examples: [{
        summary: 'two series (abridged)',
        value: '# HELP license_validate_outcomes_total Answers of validate by outcome: …\n# TYPE license_validate_outcomes_total counter\n'
          + 'license_validate_outcomes_total{outcome="redeemed"} 1234\n',
      }],
      headers: ['Cache-Control'],
    },
  },
};

const UNAUTHORIZED: Reply = {
  ...coded(401, 'UNAUTHORIZED', 'Metriklere erişim için geçerli bir token gerekli'),
  headers: [['WWW-Authenticate', 'Bearer realm="metrics"']],
};

/** With METRICS_TOKEN: the bearer token, and the 401 without it. */
const guardedDoc: RouteDoc = {
  ...doc,
  auth: 'metricsToken',
  responses: {
    ...doc.responses,
    ...errorResponses(codedErrorOf, [['no Authorization: Bearer <METRICS_TOKEN>, or another token', UNAUTHORIZED]]),
  },
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
    doc: token === null ? doc : guardedDoc,
    async handler(req) {
      if (!authorized(req.authorization)) return UNAUTHORIZED;
      return rawReply(200, await metrics.scrape(), metrics.contentType);
    },
  };
}
