import { rawReply, type Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import { metricsAuthorizer } from '../metrics/endpoint.js';
import { Type } from '@sinclair/typebox';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf } from '../openapi/schemas.js';
import { coded, codedErrors } from './replies.js';

const doc: RouteDoc = {
  summary: 'Prometheus metrics of the whole instance',
  description: 'Prometheus text format (docs/operations.md#metrics: the metric names). Whichever process of the instance (WORKERS) a scrape '
    + 'reaches, it answers for all of them: counters and histograms summed over the processes, Node\'s process_ and nodejs_ '
    + 'series one per process (label child), the usage gauges read from Redis once; a counter never goes back, also when a '
    + 'process dies and is started again. A process that does not answer within 1 s is counted as it last reported '
    + '(license_child_up 0); 503 when the figures cannot be gathered within 2 s. Open on the bound interface; with METRICS_TOKEN '
    + 'set it asks for "Authorization: Bearer <METRICS_TOKEN>" and answers 401 {success:false, error:{code:"UNAUTHORIZED"}} '
    + 'without it. With METRICS=0 nothing is recorded and this route is not served (404).',
  tags: ['operations'],
  auth: 'none',
  responses: {
    200: {
      description: 'the metrics, Prometheus text format 0.0.4',
      contentType: 'text/plain',
      schema: Type.String(),
      examples: [{
        summary: 'a summed series and a per-process one (abridged)',
        value: '# HELP license_validate_outcomes_total Answers of validate by outcome: …\n# TYPE license_validate_outcomes_total counter\n'
          + 'license_validate_outcomes_total{outcome="redeemed"} 1234\n\n'
          + '# HELP nodejs_heap_size_used_bytes Process heap size used from Node.js in bytes.\n# TYPE nodejs_heap_size_used_bytes gauge\n'
          + 'nodejs_heap_size_used_bytes{child="0"} 25509816\nnodejs_heap_size_used_bytes{child="1"} 24971128\n',
      }],
      headers: ['Cache-Control'],
    },
  },
};

const UNAUTHORIZED: Reply = {
  ...coded(401, 'UNAUTHORIZED', 'Metriklere erişim için geçerli bir token gerekli'),
  headers: [['WWW-Authenticate', 'Bearer realm="metrics"']],
};

/** Where the text comes from: the process itself (src/metrics/registry.ts), or, in a child, the whole instance (src/metrics/childScrape.ts). */
export interface MetricsSource {
  readonly contentType: string;
  scrape(): Promise<string>;
}

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
 * GET /metrics: the Prometheus text. Open on the bound interface unless METRICS_TOKEN is
 * set: then "Authorization: Bearer <METRICS_TOKEN>" (compared in constant time), as
 * Prometheus's bearer_token sends it.
 */
export function metricsRoute(metrics: MetricsSource, token: string | null): Route {
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
