import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../../http/reply.js';
import type { Handler, Route } from '../../http/route.js';
import { AdminListing, type LicenseCursor } from '../../licenses/listing.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf, License, PageAnswer } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { decodeCursor, encodeCursor, MICROS_AND_ID, pageLimit, pageOf, pageQueryFields } from '../paging.js';
import { codedErrors } from '../replies.js';
import { queryParser } from '../schemas.js';
import { invalid, licenseData } from './common.js';
import { exampleLicense, unauthorized } from './docs.js';

const ListQuery = Type.Object(pageQueryFields);

export const LIMIT_WHY = 'en az 1, en çok 500 olan bir tam sayı olmalı';
export const CURSOR_WHY = 'önceki sayfanın nextCursor değeri olmalı';

/**
 * The page an admin list was asked for: its size and the parts of its cursor (the time in
 * microseconds and the id of the previous page's last item; null for the first page), or
 * the 400 naming the bad parameter.
 */
export function adminPage(query: { limit?: string; cursor?: string }): { limit: number; after: [string, string] | null } | Reply {
  const limit = pageLimit(query.limit);
  if (query.cursor === undefined) return { limit, after: null };
  const parts = decodeCursor(query.cursor, MICROS_AND_ID);
  return parts === null ? invalid('cursor', CURSOR_WHY) : { limit, after: [parts[0] as string, parts[1] as string] };
}

/** The paging refusals both admin lists answer. */
export const pagingCases = [
  ['limit not an integer from 1 to 500', invalid('limit', LIMIT_WHY)],
  ['a cursor this list did not hand out', invalid('cursor', CURSOR_WHY)],
] as const;

const doc: RouteDoc = {
  summary: 'List licenses, oldest first, a page at a time',
  description: 'Keyset pages: pass the nextCursor of a page as ?cursor= for the next one; nextCursor null is the last page.',
  tags: ['admin'],
  auth: 'admin',
  query: ListQuery,
  responses: {
    200: {
      description: 'a page of licenses',
      schema: PageAnswer(License),
      examples: [{
        summary: 'a page with a next one',
        value: { success: true, data: { items: [(JSON.parse(exampleLicense().body as string) as { data: unknown }).data], nextCursor: 'MTc2NDA3NTYwMDAwMDAwMHxYcTN2UjhrTG0yUGE' } },
      }],
    },
    ...errorResponses(codedErrorOf, [unauthorized, ...pagingCases]),
  },
};

/** GET /admin/v1/licenses?limit=&cursor=: every license, oldest first, a page at a time. */
export function listLicensesRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const parseQuery = queryParser(ListQuery);
  const listing = new AdminListing(ctx.sql);
  return {
    method: 'get', path: '/admin/v1/licenses', errors: codedErrors, needsAuthorization: true, needsQuery: true, noStore: true, doc,
    handler: guard(async (req) => {
      const query = parseQuery(req.query);
      if (!query.ok) return invalid(query.field, query.field === 'limit' ? LIMIT_WHY : CURSOR_WHY);
      const asked = adminPage(query.value);
      if ('status' in asked) return asked;
      const { limit } = asked;
      const after: LicenseCursor | null = asked.after && { createdMicros: asked.after[0], firmaId: asked.after[1] };
      const page = pageOf(await listing.licenses(limit + 1, after), limit, (last) => encodeCursor(last.createdMicros, last.row.firmaId));
      const views = await ctx.admin.views(page.items.map((l) => l.row));
      return reply(200, { success: true, data: { items: views.map(licenseData), nextCursor: page.nextCursor } });
    }),
  };
}
