import type { Handler, Route } from '../../http/route.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { licenseKeyParam } from '../schemas.js';
import { adminReplies, licenseReply } from './common.js';
import { exampleLicense, licenseAnswer, licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';

const doc: RouteDoc = {
  summary: 'Read a license, with its live used count',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  responses: {
    200: licenseAnswer('the license', 'a license', exampleLicense()),
    ...errorResponses(codedErrorOf, [unauthorized, notFound]),
  },
};

/** GET /admin/v1/licenses/{licenseKey}: the license, with its live used count. */
export function readLicenseRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  return {
    method: 'get', path: '/admin/v1/licenses/:licenseKey', errors: codedErrors, needsAuthorization: true, doc,
    handler: guard(async (req) => {
      const key = licenseKeyParam(req.params[0]);
      const license = key === null ? null : await ctx.admin.read(key);
      return license === null ? adminReplies.LICENSE_NOT_FOUND : licenseReply(license);
    }),
  };
}
