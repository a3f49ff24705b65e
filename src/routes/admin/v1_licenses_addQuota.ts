import { Type } from '@sinclair/typebox';
import type { Handler, Route } from '../../http/route.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { bodyParser, idempotencyKeyHeader, licenseKeyParam } from '../schemas.js';
import { adminReplies, invalid, licenseReply } from './common.js';

const AddQuotaBody = Type.Object(
  { add: Type.Integer({ minimum: 1, maximum: 1e12 }) },
  { additionalProperties: false },
);

/** POST /admin/v1/licenses/{licenseKey}/quota: credit a purchased package; with an Idempotency-Key, a retry credits once. */
export function addQuotaRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const parse = bodyParser(AddQuotaBody);
  return {
    method: 'post', path: '/admin/v1/licenses/:licenseKey/quota', errors: codedErrors, needsAuthorization: true,
    bodyLimit: ctx.config.adminBodyLimitBytes, needsIdempotencyKey: true,
    handler: guard(async (req) => {
      const key = licenseKeyParam(req.params[0]);
      if (key === null) return adminReplies.LICENSE_NOT_FOUND;
      const parsed = parse(req.body);
      if (!parsed.ok) return invalid(parsed.field);
      const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
      if (idempotencyKey === false) return invalid('Idempotency-Key', '1-255 yazdırılabilir ASCII karakter olmalı');
      const license = await ctx.admin.addQuota(key, parsed.value.add, idempotencyKey);
      if (license === null) return adminReplies.LICENSE_NOT_FOUND;
      if (license === 'reused') return adminReplies.IDEMPOTENCY_KEY_REUSED;
      return licenseReply(license);
    }),
  };
}
