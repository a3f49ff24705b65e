import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../../http/reply.js';
import type { Route } from '../../http/route.js';
import { AuditLog, CHANGED, type AuditRecord } from '../../licenses/audit.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf, PageAnswer, Timestamp, Uuid } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { encodeCursor, pageOf, pageQueryFields } from '../paging.js';
import { codedErrors } from '../replies.js';
import { canonicalKey, ExpiryDate, LicenseKey } from '../schemas.js';
import type { AdminGuard } from './common.js';
import { unauthorized } from './docs.js';
import { adminQueryParser, type Checked } from './parsers.js';
import { adminPage, PAGING_EXPECTED, pagingCases } from './v1_licenses_list.js';

const AuditQuery = Type.Object({
  ...pageQueryFields,
  licenseKey: Type.Optional({ ...LicenseKey, description: 'only the records of this license (a UUID, any case)' }),
  // an instant by the same rule as a license's expiry date (an RFC 3339 date-time Date represents exactly)
  since: Type.Optional({ ...ExpiryDate, description: 'only the records of this instant or later (RFC 3339)' }),
});

const parseQuery = adminQueryParser(AuditQuery, PAGING_EXPECTED);
const refusalOfQuery = (query: string): Reply => (parseQuery(query) as Extract<Checked<unknown>, { ok: false }>).reply;

/** A record id is a positive integer (a bigint identity): a cursor naming anything else was not handed out. */
const RECORD_ID = /^[1-9]\d{0,17}$/;

/** A field's values in a record: any field of the license as the admin API names it; a secret reads "changed". */
const Fields = Type.Object({}, {
  additionalProperties: true,
  description: 'the fields that changed, by the admin API\'s names (organizationName, totalQuota, expiryDate, isActive, domains, '
    + `webhookUrl, ...); a secret (password, webhookSecret) is never shown: where one is set it reads "${CHANGED}", and null where there is none`,
});

const AuditRecordSchema = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'the record\'s number, in the order records were written' }),
  at: { ...Timestamp, description: 'when the change was made, by the server\'s clock' },
  licenseKey: Uuid,
  action: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('add-quota')], {
    description: 'create: POST /admin/v1/licenses; update: PATCH; add-quota: a credited purchase (a replay credits nothing and is not recorded)',
  }),
  before: Type.Union([Fields, Type.Null()], { description: 'the changed fields as they were; null for a create' }),
  after: { ...Fields, description: 'the changed fields as they became; for a create, every field' },
  admin: Type.String({ minLength: 1, description: 'the name of the admin whose token made the change (ADMIN_TOKENS; "admin" for ADMIN_TOKEN)' }),
  address: Type.String({ description: 'the client address of the admin request, as the service saw it (TRUST_PROXY applied)' }),
  idempotencyKey: Type.Union([Type.String(), Type.Null()], { description: 'the Idempotency-Key of the request, when one was given' }),
}, { additionalProperties: false });

const example = {
  id: 42, at: '2025-11-25T13:00:00.123Z', licenseKey: EXAMPLE.licenseKey, action: 'update',
  before: { isActive: true, password: CHANGED }, after: { isActive: false, password: CHANGED },
  admin: 'alice', address: '203.0.113.7', idempotencyKey: null,
};

const doc: RouteDoc = {
  summary: 'The admin audit log: every admin change, newest first, a page at a time',
  description: 'One record per change made through the admin API (a create, a PATCH, a credited purchase), written in the '
    + 'change\'s own transaction: no change without its record, no record of a change that did not happen (a refused request, '
    + 'a replayed purchase). Records are never changed or removed. Keyset pages as the license list.',
  tags: ['admin'],
  auth: 'admin',
  query: AuditQuery,
  responses: {
    200: {
      description: 'a page of records, newest first (in the order they were written)',
      schema: PageAnswer(AuditRecordSchema),
      examples: [{ summary: 'a deactivation with a password change, the last page', value: { success: true, data: { items: [example], nextCursor: null } } }],
    },
    ...errorResponses(codedErrorOf, [
      unauthorized,
      ...pagingCases,
      ['licenseKey not a UUID', refusalOfQuery('licenseKey=abc')],
      ['since not an RFC 3339 date-time', refusalOfQuery('since=yesterday')],
    ]),
  },
};

function recordData(r: AuditRecord): Record<string, unknown> {
  return {
    id: r.id, at: r.at.toISOString(), licenseKey: r.licenseKey, action: r.action, before: r.before, after: r.after,
    admin: r.admin, address: r.address, idempotencyKey: r.idempotencyKey,
  };
}

/** GET /admin/v1/audit?licenseKey=&since=&limit=&cursor=: the admin audit log, newest first, a page at a time. */
export function auditRoute(ctx: RouteContext, guard: AdminGuard): Route {
  const log = new AuditLog(ctx.sql);
  return {
    method: 'get', path: '/admin/v1/audit', errors: codedErrors, needsAuthorization: true, needsQuery: true, noStore: true, doc,
    handler: guard(async (req) => {
      const asked = adminPage(parseQuery, req.query, RECORD_ID);
      if ('status' in asked) return asked;
      const { limit } = asked;
      // the cursor has the admin lists' shape (time, id); the page goes on from the id
      const afterId = asked.after === null ? null : asked.after[1];
      const { licenseKey, since } = asked.query;
      const filter = { licenseKey: licenseKey === undefined ? null : canonicalKey(licenseKey), since: since ?? null };
      const rows = await log.records(filter, limit + 1, afterId);
      const page = pageOf(rows, limit, (last) => encodeCursor(last.atMicros, String(last.id)));
      return reply(200, { success: true, data: { items: page.items.map(recordData), nextCursor: page.nextCursor } });
    }),
  };
}
