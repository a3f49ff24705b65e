import type { Route } from '../../http/route.js';
import type { RouteContext } from '../context.js';
import { adminGuard } from './common.js';
import { addQuotaRoute } from './v1_licenses_addQuota.js';
import { createLicenseRoute } from './v1_licenses_create.js';
import { listLicensesRoute } from './v1_licenses_list.js';
import { readLicenseRoute } from './v1_licenses_read.js';
import { licenseTokensRoute } from './v1_licenses_tokens.js';
import { patchLicenseRoute } from './v1_licenses_patch.js';

/** The admin API (in /openapi.json), every route behind ADMIN_TOKEN. */
export function adminRoutes(ctx: RouteContext, adminToken: string): Route[] {
  const guard = adminGuard(adminToken);
  return [
    createLicenseRoute(ctx, guard), readLicenseRoute(ctx, guard), patchLicenseRoute(ctx, guard), addQuotaRoute(ctx, guard),
    listLicensesRoute(ctx, guard), licenseTokensRoute(ctx, guard)];
}
