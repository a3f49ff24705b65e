import { Type } from '@sinclair/typebox';
import type { Handler, Route } from '../../http/route.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { bodyParser, IdempotencyKey, idempotencyKeyHeader, licenseKeyParam } from '../schemas.js';
import { adminReplies, invalid, licenseReply } from './common.js';
import { exampleLicense, licenseAnswer, licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';

const AddQuotaBody = Type.Object(
  { add: Type.Integer({ minimum: 1, maximum: 1e12 }) },
  { additionalProperties: false },
);

const badIdempotencyKey = invalid('Idempotency-Key', '1-255 yazdırılabilir ASCII karakter olmalı');

const doc: RouteDoc = {
  summary: 'Add a purchased package to a license\'s quota',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  headers: {
    'Idempotency-Key': {
      description: '1-255 printable ASCII: a retried purchase with the same key credits once (and answers the license again)',
      schema: IdempotencyKey,
    },
  },
  body: { schema: AddQuotaBody, examples: [{ summary: 'a package of 500', value: { add: 500 } }] },
  responses: {
    200: licenseAnswer('the license with the quota added', 'credited', exampleLicense({ totalQuota: 600 })),
    ...errorResponses(codedErrorOf, [
      ['add missing or not a positive integer', invalid('add')],
      ['a malformed Idempotency-Key header', badIdempotencyKey],
      unauthorized,
      notFound,
      ['the Idempotency-Key was used for another purchase', adminReplies.IDEMPOTENCY_KEY_REUSED],
    ]),
  },
};

/** POST /admin/v1/licenses/{licenseKey}/quota: credit a purchased package; with an Idempotency-Key, a retry credits once. */
export function addQuotaRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const parse = bodyParser(AddQuotaBody);
  return {
    method: 'post', path: '/admin/v1/licenses/:licenseKey/quota', errors: codedErrors, needsAuthorization: true,
    bodyLimit: ctx.config.adminBodyLimitBytes, needsIdempotencyKey: true, doc,
    handler: guard(async (req) => {
      const key = licenseKeyParam(req.params[0]);
      if (key === null) return adminReplies.LICENSE_NOT_FOUND;
      const parsed = parse(req.body);
      if (!parsed.ok) return invalid(parsed.field);
      const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
      if (idempotencyKey === false) return badIdempotencyKey;
      const license = await ctx.admin.addQuota(key, parsed.value.add, idempotencyKey);
      if (license === null) return adminReplies.LICENSE_NOT_FOUND;
      if (license === 'reused') return adminReplies.IDEMPOTENCY_KEY_REUSED;
      return licenseReply(license);
    }),
  };
}
