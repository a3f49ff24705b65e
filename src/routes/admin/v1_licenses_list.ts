import { Type } from '@sinclair/typebox';
import { reply, type Reply } from '../../http/reply.js';
import type { Handler, Request, Route } from '../../http/route.js';
import { AdminListing, type LicenseCursor } from '../../licenses/listing.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf, License, PageAnswer } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { decodeCursor, encodeCursor, MICROS_AND_ID, pageLimit, pageOf, pageQueryFields } from '../paging.js';
import { codedErrors } from '../replies.js';
import { licenseKeyParam } from '../schemas.js';
import { adminReplies, licenseData } from './common.js';
import { exampleLicense, unauthorized } from './docs.js';
import { adminQueryParser, type Checked } from './parsers.js';
import { notValid, refusal } from './refusals.js';

const ListQuery = Type.Object(pageQueryFields);

/** What the paging parameters must be, beside their schemas' patterns (./refusals.ts). */
export const PAGING_EXPECTED = { limit: '1 ile 500 arasında bir tam sayı', cursor: 'önceki sayfanın nextCursor değeri' };

/** The page an admin list was asked for: its query, its size, and the parts of its cursor. */
export interface AdminPage<Q> {
  query: Q;
  limit: number;
  /** the time in microseconds and the id of the previous page's last item; null for the first page */
  after: [string, string] | null;
}

/**
 * The page an admin list was asked for, from its query string read by the list's own
 * parser, or the 400 naming the bad parameter. `idShape`: what the id of a cursor this list
 * hands out looks like, when the lists' shape (MICROS_AND_ID) admits more.
 */
export function adminPage<Q extends { limit?: string; cursor?: string }>(
  parse: (query: string) => Checked<Q>, rawQuery: string, idShape?: RegExp,
): AdminPage<Q> | Reply {
  const parsed = parse(rawQuery);
  if (!parsed.ok) return parsed.reply;
  const query = parsed.value;
  const limit = pageLimit(query.limit);
  if (query.cursor === undefined) return { query, limit, after: null };
  const parts = decodeCursor(query.cursor, MICROS_AND_ID);
  if (parts === null || (idShape !== undefined && !idShape.test(parts[1] as string))) return badCursor(query.cursor);
  return { query, limit, after: [parts[0] as string, parts[1] as string] };
}

/**
 * The page asked of one license's list (its tokens, its ledger) and the license's firma id,
 * or the answer: 404 for a key no license has (one that is no UUID too), else the 400 of
 * the query, checked before the license is looked up.
 */
export async function licensePage<Q extends { limit?: string; cursor?: string }>(
  ctx: RouteContext, req: Request, parse: (query: string) => Checked<Q>, idShape?: RegExp,
): Promise<AdminPage<Q> & { firmaId: string } | Reply> {
  const key = licenseKeyParam(req.params[0]);
  if (key === null) return adminReplies.LICENSE_NOT_FOUND;
  const asked = adminPage(parse, req.query, idShape);
  if ('status' in asked) return asked;
  const firmaId = (await ctx.store.byKey(key))?.firmaId;
  return firmaId === undefined ? adminReplies.LICENSE_NOT_FOUND : { ...asked, firmaId };
}

const badCursor = (cursor: string): Reply => refusal('cursor', notValid(cursor), PAGING_EXPECTED.cursor);

const parseQuery = adminQueryParser(ListQuery, PAGING_EXPECTED);

/** The paging refusals both admin lists answer (their 400 on a query: the first one this list's parser gives). */
export const pagingCases = [
  ['limit not an integer from 1 to 500', (parseQuery('limit=501') as { reply: Reply }).reply],
  ['a cursor this list did not hand out', badCursor('zzz')],
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
  const listing = new AdminListing(ctx.sql);
  return {
    method: 'get', path: '/admin/v1/licenses', errors: codedErrors, needsAuthorization: true, needsQuery: true, noStore: true, doc,
    handler: guard(async (req) => {
      const asked = adminPage(parseQuery, req.query);
      if ('status' in asked) return asked;
      const { limit } = asked;
      const after: LicenseCursor | null = asked.after && { createdMicros: asked.after[0], firmaId: asked.after[1] };
      const page = pageOf(await listing.licenses(limit + 1, after), limit, (last) => encodeCursor(last.createdMicros, last.row.firmaId));
      const views = await ctx.admin.views(page.items.map((l) => l.row));
      return reply(200, { success: true, data: { items: views.map(licenseData), nextCursor: page.nextCursor } });
    }),
  };
}
