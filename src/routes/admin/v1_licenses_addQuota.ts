import { Type } from '@sinclair/typebox';
import type { Route } from '../../http/route.js';
import { bodyOf, errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { IdempotencyKey, idempotencyKeyHeader, licenseKeyParam } from '../schemas.js';
import { adminReplies, type AdminGuard, licenseReply } from './common.js';
import { exampleLicense, licenseKeyParam as keyParam, notFound, PurchaseAnswer, unauthorized } from './docs.js';
import { adminBodyParser, refusalOf } from './parsers.js';
import { notValid, refusal } from './refusals.js';

const AddQuotaBody = Type.Object(
  { add: Type.Integer({ minimum: 1, maximum: 1e12 }) },
  { additionalProperties: false },
);

const parse = adminBodyParser(AddQuotaBody);

const badIdempotencyKey = (header: string) =>
  refusal('Idempotency-Key', notValid(header), '1-255 yazdırılabilir ASCII karakter, başında ve sonunda boşluk olmadan');

const doc: RouteDoc = {
  summary: 'Add a purchased package to a license\'s quota',
  description: 'With an Idempotency-Key, a retried purchase credits once: the retry answers 200 with the license as it is and '
    + '`replayed: true`, so a client can tell "credited now" from "credited before".',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  headers: {
    'Idempotency-Key': {
      description: '1-255 printable ASCII: a retried purchase with the same key credits once (and answers the license again, '
        + 'with replayed: true)',
      schema: IdempotencyKey,
    },
  },
  body: { schema: AddQuotaBody, examples: [{ summary: 'a package of 500', value: { add: 500 } }] },
  responses: {
    200: {
      description: 'the license with the quota added (replayed: false), or, for a retry with the same Idempotency-Key, as it '
        + 'is (replayed: true: credited before, nothing credited now)',
      schema: PurchaseAnswer,
      examples: [
        { summary: 'credited', value: bodyOf(exampleLicense({ totalQuota: 600 }, 200, { replayed: false })) },
        { summary: 'a retry of a purchase credited before', value: bodyOf(exampleLicense({ totalQuota: 600 }, 200, { replayed: true })) },
      ],
    },
    ...errorResponses(codedErrorOf, [
      ['add missing or not a whole number from 1 to 10^12: the message says what was wrong and what is expected',
        refusalOf(parse, { add: 0 })],
      ['a malformed Idempotency-Key header', badIdempotencyKey('k'.repeat(256))],
      unauthorized,
      notFound,
      ['the Idempotency-Key was used for another purchase', adminReplies.IDEMPOTENCY_KEY_REUSED],
    ]),
  },
};

/** POST /admin/v1/licenses/{licenseKey}/quota: credit a purchased package; with an Idempotency-Key, a retry credits once. */
export function addQuotaRoute(ctx: RouteContext, guard: AdminGuard): Route {
  return {
    method: 'post', path: '/admin/v1/licenses/:licenseKey/quota', errors: codedErrors, needsAuthorization: true,
    bodyLimit: ctx.config.adminBodyLimitBytes, needsIdempotencyKey: true, doc, needsClientAddress: true, // the audit log's address
    handler: guard(async (req, caller) => {
      const key = licenseKeyParam(req.params[0]);
      if (key === null) return adminReplies.LICENSE_NOT_FOUND;
      const parsed = parse(req.body);
      if (!parsed.ok) return parsed.reply;
      const idempotencyKey = idempotencyKeyHeader(req.idempotencyKey);
      if (idempotencyKey === false) return badIdempotencyKey(req.idempotencyKey);
      const license = await ctx.admin.addQuota(key, parsed.value.add, { admin: caller.name, address: caller.address, idempotencyKey });
      if (license === null) return adminReplies.LICENSE_NOT_FOUND;
      if (license === 'reused') return adminReplies.IDEMPOTENCY_KEY_REUSED;
      return licenseReply(license, 200, { replayed: license.replayed });
    }),
  };
}
