import type { Route } from '../http/route.js';
import { adminRoutes } from './admin/index.js';
import type { RouteContext } from './context.js';
import { dashboardRoutes } from './dashboard.js';
import { documentationRoutes } from './docs.js';
import { healthRoute } from './healthz.js';
import { checkQuotaRoute } from './license_checkQuota.js';
import { historyRoute } from './license_history.js';
import { holderLedgerRoute } from './license_ledger.js';
import { validateRoute } from './license_validate.js';
import { releaseRoute } from './license_release.js';
import { metricsRoute, type MetricsSource } from './metrics.js';
import { readyRoute } from './readyz.js';
import { rootRoute } from './root.js';
import { signRoute } from './signature_sign.js';
import { getTokenRoute } from './v1_auth_getToken.js';
import { signTokenRoute } from './v1_auth_signToken.js';
import { jwksRoute } from './wellKnown_jwks.js';

/**
 * Every route this configuration serves, the documentation last (it documents every route
 * before it: the admin API apart, and only when an admin token is set). The service
 * registers these; `npm run openapi` builds the same list only to read a document.
 * `metrics`: what GET /metrics answers with (in a child of WORKERS, the whole instance:
 * src/metrics/childScrape.ts).
 */
export function serviceRoutes(ctx: RouteContext, metrics: MetricsSource = ctx.metrics): Route[] {
  const { config } = ctx;
  const admin = config.adminTokens.length > 0 ? adminRoutes(ctx, config.adminTokens) : null;
  const routes: Route[] = [
    getTokenRoute(ctx), signTokenRoute(ctx), validateRoute(ctx), releaseRoute(ctx), signRoute(ctx), checkQuotaRoute(ctx), historyRoute(ctx),
    holderLedgerRoute(ctx), jwksRoute(ctx), healthRoute(ctx), readyRoute(ctx), ...dashboardRoutes(ctx), rootRoute(admin !== null),
  ];
  if (config.metrics) routes.push(metricsRoute(metrics, config.metricsToken));
  const documentation = documentationRoutes(routes, admin, config, ctx.log);
  return [...routes, ...(admin ?? []), ...documentation];
}
