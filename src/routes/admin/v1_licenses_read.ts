import type { Handler, Route } from '../../http/route.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { licenseKeyParam } from '../schemas.js';
import { adminReplies, licenseReply } from './common.js';

/** GET /admin/v1/licenses/{licenseKey}: the license, with its live used count. */
export function readLicenseRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  return {
    method: 'get', path: '/admin/v1/licenses/:licenseKey', errors: codedErrors, needsAuthorization: true,
    handler: guard(async (req) => {
      const key = licenseKeyParam(req.params[0]);
      const license = key === null ? null : await ctx.admin.read(key);
      return license === null ? adminReplies.LICENSE_NOT_FOUND : licenseReply(license);
    }),
  };
}
