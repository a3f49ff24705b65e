import type { AdminToken } from '../../config/secrets.js';
import type { Route } from '../../http/route.js';
import type { RouteContext } from '../context.js';
import { adminGuard } from './common.js';
import { auditRoute } from './v1_audit.js';
import { addQuotaRoute } from './v1_licenses_addQuota.js';
import { createLicenseRoute } from './v1_licenses_create.js';
import { listLicensesRoute } from './v1_licenses_list.js';
import { readLicenseRoute } from './v1_licenses_read.js';
import { licenseLedgerRoute } from './v1_licenses_ledger.js';
import { licenseTokensRoute } from './v1_licenses_tokens.js';
import { patchLicenseRoute } from './v1_licenses_patch.js';

/** The admin API (in /admin/openapi.json), every route behind the admin tokens (ADMIN_TOKENS or ADMIN_TOKEN); registered only when one is set. */
export function adminRoutes(ctx: RouteContext, admins: readonly AdminToken[]): Route[] {
  const guard = adminGuard(admins);
  return [
    createLicenseRoute(ctx, guard), readLicenseRoute(ctx, guard), patchLicenseRoute(ctx, guard), addQuotaRoute(ctx, guard),
    listLicensesRoute(ctx, guard), licenseTokensRoute(ctx, guard), licenseLedgerRoute(ctx, guard), auditRoute(ctx, guard)];
}
