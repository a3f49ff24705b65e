import { Type } from '@sinclair/typebox';
import type { Route } from '../../http/route.js';
import { bodyOf, errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { codedErrors } from '../replies.js';
import { ExpiryDate, IdempotencyKey, idempotencyKeyHeader, licenseKeyParam, Text } from '../schemas.js';
import { adminReplies, type AdminGuard, licenseReply } from './common.js';
import { exampleLicense, licenseKeyParam as keyParam, notFound, PurchaseAnswer, unauthorized } from './docs.js';
import { adminBodyParser, refusalOf } from './parsers.js';
import { notValid, refusal } from './refusals.js';

const AddQuotaBody = Type.Object(
  {
    add: Type.Integer({ minimum: 1, maximum: 1e12 }),
    expiresAt: Type.Optional(Type.Union([ExpiryDate, Type.Null()], {
      description: 'when the package expires, in the future; absent or null: with the license (its expiryDate now)',
    })),
    note: Type.Optional(Type.Union([Text({ maxLength: 500 }), Type.Null()], { description: 'the operator\'s note (an invoice number)' })),
  },
  { additionalProperties: false },
);

const parse = adminBodyParser(AddQuotaBody);

const pastExpiry = (expiresAt: string) => refusal('expiresAt', `${expiresAt} geçmişte`, 'gelecekte bir zaman (ISO 8601)');

const badIdempotencyKey = (header: string) =>
  refusal('Idempotency-Key', notValid(header), '1-255 yazdırılabilir ASCII karakter, başında ve sonunda boşluk olmadan');

const doc: RouteDoc = {
  summary: 'Add a purchased package to a license\'s quota',
  description: 'A package of `add` units with its own expiry (the license\'s by default) and an optional note; it is a purchase '
    + 'entry in the ledger. Redemptions spend the package that expires first; one that expires with units left forfeits them. '
    + 'With an Idempotency-Key, a retried purchase credits once: the retry answers 200 with the license as it is and '
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
  body: {
    schema: AddQuotaBody,
    examples: [
      { summary: 'a package of 500, expiring with the license', value: { add: 500 } },
      { summary: 'a package of 1000 for one year', value: { add: 1000, expiresAt: '2027-12-31T23:59:59.000Z', note: 'Fatura 2026/118' } },
    ],
  },
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
      ['expiresAt not in the future: a package that cannot be spent', pastExpiry('2024-12-31T23:59:59.000Z')],
      ['a malformed Idempotency-Key header', badIdempotencyKey('k'.repeat(256))],
      unauthorized,
      notFound,
      ['the Idempotency-Key was used for another purchase (another license, amount, expiry or note)', adminReplies.IDEMPOTENCY_KEY_REUSED],
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
      const { add, expiresAt, note } = parsed.value;
      const expiry = expiresAt == null ? null : new Date(expiresAt);
      if (expiry !== null && expiry.getTime() <= Date.now()) return pastExpiry(expiresAt as string);
      const pkg = { add, expiresAt: expiry, note: note ?? null };
      const license = await ctx.admin.addQuota(key, pkg, { admin: caller.name, address: caller.address, idempotencyKey });
      if (license === null) return adminReplies.LICENSE_NOT_FOUND;
      if (license === 'reused') return adminReplies.IDEMPOTENCY_KEY_REUSED;
      return licenseReply(license, 200, { replayed: license.replayed });
    }),
  };
}
