import { Type } from '@sinclair/typebox';
import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RedemptionCursor as Cursor } from '../licenses/store.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, Timestamp, Uuid } from '../openapi/schemas.js';
import type { RouteContext } from './context.js';
import { holderPageCases, holderPageRoute } from './holderReads.js';
import { SIGN_DOCUMENTS_MAX } from './receipt.js';
import { decodeCursor as decodeParts, encodeCursor as encodeParts, pageOf, pageQueryFields } from './paging.js';
import { ImzaTipi, isInstant, LicenseKey } from './schemas.js';

/**
 * ?limit=1..500 and the cursor the previous page handed out: the base64url of an instant
 * and a token id, 61 bytes, so 82 characters (no other length decodes to 61 bytes).
 */
const HistoryQuery = Type.Object({
  limit: pageQueryFields.limit,
  cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{82}$', description: pageQueryFields.cursor.description })),
});

function encodeCursor(c: Cursor): string {
  return encodeParts(c.usedAt, c.tokenId);
}

/** What encodeCursor made: an instant as toISOString writes it, and a token id (a UUID). */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The cursor, or null unless it decodes to exactly what this server hands out. */
function decodeCursor(text: string): Cursor | null {
  const parts = decodeParts(text, CURSOR);
  if (parts === null) return null;
  const [usedAt, tokenId] = parts as [string, string];
  // the years and days the server can have written (year 0000 is no Postgres date)
  if (!isInstant(usedAt) || new Date(usedAt).toISOString() !== usedAt) return null;
  return { usedAt, tokenId };
}

const HistoryPage = Type.Object({
  success: Type.Literal(true),
  data: Type.Object({
    items: Type.Array(Type.Object({
      tokenId: Uuid, imzaTipi: ImzaTipi, usedAt: Timestamp, origin: Type.Union([Type.String(), Type.Null()], { description: 'as the client sent it' }),
      documents: Type.Optional(Type.Integer({
        minimum: 1, maximum: SIGN_DOCUMENTS_MAX, description: 'a redemption by POST /api/Signature/sign: the documents its receipt names (absent for validate\'s)',
      })),
      releasedAt: Type.Optional({
        ...Timestamp, description: 'its unit was given back after a failed signing (POST /api/license/release); absent when not released',
      }),
    }, { additionalProperties: false })),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'null on the last page' }),
  }, { additionalProperties: false }),
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'List a license\'s redemptions, newest first',
  description: 'Paged with limit and cursor. Needs an access token of that very license; a password change or a deactivation ' +
    'revokes older access tokens.',
  tags: ['public'],
  auth: 'accessToken',
  params: { licenseKey: { description: 'the license key, a UUID (any case)', schema: LicenseKey } },
  query: HistoryQuery,
  responses: {
    200: {
      description: 'one page of redemptions',
      schema: HistoryPage,
      examples: [{
        summary: 'a page with more to come',
        value: {
          success: true,
          data: {
            items: [
              { tokenId: '019abc3e-51d2-7c4a-9b1e-3f6a2d8c7e10', imzaTipi: 0, usedAt: '2026-03-01T09:28:12.417Z', origin: 'https://eczane.ornek.com.tr', documents: 2 },
              { tokenId: '019abc2f-0e7b-7d15-8a93-6c2e4b1f9d07', imzaTipi: 1, usedAt: '2026-03-01T09:11:40.052Z', origin: null },
            ],
            nextCursor: encodeCursor({ usedAt: '2026-03-01T09:11:40.052Z', tokenId: '019abc2f-0e7b-7d15-8a93-6c2e4b1f9d07' }),
          },
        },
      }, { summary: 'no redemptions yet', value: { success: true, data: { items: [], nextCursor: null } } }],
    },
    ...errorResponses(codedErrorOf, holderPageCases(
      'the access token belongs to another license',
      'too many history requests for this license (RATE_HISTORY_PER_MIN; answered after about a second unless the window ends sooner)',
    )),
  },
};

/** GET /api/License/history/{licenseKey}: the license's redemptions, newest first. */
export function historyRoute(ctx: RouteContext): Route {
  return holderPageRoute(ctx, {
    path: '/api/license/history/:licenseKey',
    doc,
    query: HistoryQuery,
    decodeCursor,
    read: async (firmaId, { pageSize, cursor }) => {
      const rows = await ctx.store.redemptions(firmaId, pageSize + 1, cursor);
      const page = pageOf(rows, pageSize, (last) => encodeCursor({ usedAt: last.usedAt.toISOString(), tokenId: last.tokenId }));
      const items = page.items.map((r) => ({
        tokenId: r.tokenId, imzaTipi: r.imzaTipi, usedAt: r.usedAt.toISOString(), origin: r.origin,
        ...(r.documents === null ? {} : { documents: r.documents }),
        ...(r.releasedAt === null ? {} : { releasedAt: r.releasedAt.toISOString() }),
      }));
      return reply(200, { success: true, data: { items, nextCursor: page.nextCursor } });
    },
  });
}
