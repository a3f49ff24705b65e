import { Type } from '@sinclair/typebox';
import { reply } from '../../http/reply.js';
import type { Handler, Route } from '../../http/route.js';
import { AdminListing, type IssuedToken, type TokenCursor } from '../../licenses/listing.js';
import { EXAMPLE } from '../../openapi/examples.js';
import { errorResponses, type RouteDoc } from '../../openapi/routeDoc.js';
import { codedErrorOf, IssuedToken as IssuedTokenSchema, PageAnswer } from '../../openapi/schemas.js';
import type { RouteContext } from '../context.js';
import { encodeCursor, pageOf, pageQueryFields } from '../paging.js';
import { codedErrors } from '../replies.js';
import { licenseKeyParam as keyParam, notFound, unauthorized } from './docs.js';
import { adminQueryParser, type Checked } from './parsers.js';
import { licensePage, PAGING_EXPECTED, pagingCases } from './v1_licenses_list.js';

const TokensQuery = Type.Object({
  ...pageQueryFields,
  status: Type.Optional(Type.Union([Type.Literal('issued'), Type.Literal('used'), Type.Literal('expired')])),
});

const parseQuery = adminQueryParser(TokensQuery, PAGING_EXPECTED);
const badStatus = (parseQuery('status=unused') as Extract<Checked<unknown>, { ok: false }>).reply;

const doc: RouteDoc = {
  summary: 'A license\'s issued sign tokens with their status, newest first',
  description: 'From Postgres: a token shows (and shows as used) once the usage worker has written it (its lag: /healthz). '
    + 'Keyset pages as the license list; ?status= keeps one status.',
  tags: ['admin'],
  auth: 'admin',
  params: keyParam,
  query: TokensQuery,
  responses: {
    200: {
      description: 'a page of tokens',
      schema: PageAnswer(IssuedTokenSchema),
      examples: [{
        summary: 'one used token, the last page',
        value: {
          success: true,
          data: {
            items: [{
              tokenId: EXAMPLE.tokenId, imzaTipi: 0, status: 'used', issuedAt: '2025-11-25T13:00:00.000Z',
              expiresAt: '2025-11-25T13:05:00.000Z', usedAt: '2025-11-25T13:01:12.345Z', origin: 'eczane.ornek.com.tr',
            }],
            nextCursor: null,
          },
        },
      }],
    },
    ...errorResponses(codedErrorOf, [unauthorized, notFound, ...pagingCases, ['status not issued, used or expired', badStatus]]),
  },
};


function tokenData(t: IssuedToken): Record<string, unknown> {
  return {
    tokenId: t.tokenId,
    imzaTipi: t.imzaTipi,
    status: t.status,
    issuedAt: t.issuedAt.toISOString(),
    expiresAt: t.expiresAt?.toISOString() ?? null,
    usedAt: t.usedAt?.toISOString() ?? null,
    origin: t.origin,
  };
}

/**
 * GET /admin/v1/licenses/{licenseKey}/tokens?limit=&cursor=&status=: the license's issued
 * sign tokens, newest first, each issued (unused, valid), used or expired (unused, past its
 * expiry). The usage worker writes issues and redemptions to Postgres after the fact: a
 * token shows here, and shows as used, once the worker has written it (its lag, /healthz).
 */
export function licenseTokensRoute(ctx: RouteContext, guard: (h: Handler) => Handler): Route {
  const listing = new AdminListing(ctx.sql);
  return {
    method: 'get', path: '/admin/v1/licenses/:licenseKey/tokens', errors: codedErrors, needsAuthorization: true, needsQuery: true,
    noStore: true, doc,
    handler: guard(async (req) => {
      const asked = await licensePage(ctx, req, parseQuery);
      if ('status' in asked) return asked;
      const { limit, firmaId } = asked;
      const after: TokenCursor | null = asked.after && { issuedMicros: asked.after[0], tokenId: asked.after[1] };
      const rows = await listing.tokens(firmaId, limit + 1, after, asked.query.status ?? null);
      const page = pageOf(rows, limit, (last) => encodeCursor(last.issuedMicros, last.tokenId));
      return reply(200, { success: true, data: { items: page.items.map(tokenData), nextCursor: page.nextCursor } });
    }),
  };
}
