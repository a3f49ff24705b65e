import { Type } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { HoldBack, Turns } from '../http/holdBack.js';
import { reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RedemptionCursor as Cursor } from '../licenses/store.js';
import { errorResponses, type RouteDoc } from '../openapi/routeDoc.js';
import { codedErrorOf, RateLimitedError, Timestamp, Uuid } from '../openapi/schemas.js';
import { Outcome, runScript, scripts } from '../redis/scripts.js';
import type { RouteContext } from './context.js';
import { RateLimitFields } from './rateLimitFields.js';
import { SIGN_DOCUMENTS_MAX } from './receipt.js';
import { authReplies, coded, codedErrors, INVALID_LICENSE_KEY, invalidRequest, rateLimited } from './replies.js';
import { decodeCursor as decodeParts, encodeCursor as encodeParts, pageLimit, pageOf, pageQueryFields } from './paging.js';
import { bearer, ImzaTipi, isInstant, LicenseKey, licenseKeyParam, queryParser } from './schemas.js';

/**
 * ?limit=1..500 and the cursor the previous page handed out: the base64url of an instant
 * and a token id, 61 bytes, so 82 characters (no other length decodes to 61 bytes).
 */
const HistoryQuery = Type.Object({
  limit: pageQueryFields.limit,
  cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{82}$', description: pageQueryFields.cursor.description })),
});

//                    status  code                  message
const invalidKey = coded(400, ...INVALID_LICENSE_KEY);
const forbidden = coded(403, 'FORBIDDEN', 'Bu lisansın geçmişine erişim yetkiniz yok');

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

/**
 * The answers that carry the RateLimit fields: those that passed the count, which comes after
 * every check that needs no look-up and after the license check (a token of another license
 * spends nothing of this one's), and before Postgres is read (src/openapi/routeDoc.ts RateLimitDoc).
 */
const LIMIT = {
  per: 'license', setting: 'RATE_HISTORY_PER_MIN',
  statuses: {
    200: 'every',
    401: 'INVALID_TOKEN for an access token revoked by a password change or a deactivation (not for one missing, malformed '
      + 'or expired: refused before any look-up)',
    429: 'every',
  },
} as const;

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
    ...errorResponses(codedErrorOf, [
      ['the key is not a UUID', invalidKey],
      ['limit not 1 to 500', invalidRequest('limit')],
      ['a cursor this server did not hand out', invalidRequest('cursor')],
      ['the access token is missing, malformed, expired or revoked', authReplies.INVALID_TOKEN],
      ['the access token belongs to another license', forbidden],
      ['too many history requests for this license (RATE_HISTORY_PER_MIN; answered after about a second unless the window ends sooner)', rateLimited(42_000), RateLimitedError],
    ]),
  },
};

/** How long a refusal by the history limit is held before it is answered (not when the window ends sooner). */
const REFUSAL_HOLD_MS = 1_000;

/**
 * History pages read and built at once per process: a burst of full pages (500 rows each)
 * waits its turn, a page or two at a time, between other customers' redemptions.
 */
const PAGES_AT_ONCE = 2;

/** GET /api/License/history/{licenseKey}: the license's redemptions, newest first. */
export function historyRoute(ctx: RouteContext): Route {
  const parseQuery = queryParser(HistoryQuery);
  const limit = ctx.config.rate.history;
  const fields = new RateLimitFields('history', limit);
  const refusals = new HoldBack(0, REFUSAL_HOLD_MS);
  const pages = new Turns(PAGES_AT_ONCE);
  /** One Redis call counts the request against its license's limit; null: the limit is off, nothing counted. */
  const count = (firmaId: string) => (limit === 0 ? null
    : runScript(ctx.redis, scripts.count(ctx.keys.forLicense(firmaId).rateHistory, limit, RATE_WINDOW_MS)));
  return {
    method: 'get',
    path: '/api/license/history/:licenseKey',
    errors: codedErrors,
    needsAuthorization: true,
    needsQuery: true,
    cors: true,
    noStore: true,
    doc: { ...doc, rateLimits: [fields.describe(LIMIT)] },
    async handler(req) {
      const token = bearer(req.authorization);
      const claims = token === null ? null : ctx.tokens.verifyAccessToken(token);
      if (claims === null) return authReplies.INVALID_TOKEN;
      const licenseKey = licenseKeyParam(req.params[0]);
      if (licenseKey === null) return invalidKey;
      const query = parseQuery(req.query);
      if (!query.ok) return invalidRequest(query.field);
      const pageSize = pageLimit(query.value.limit);
      const cursor = query.value.cursor === undefined ? null : decodeCursor(query.value.cursor);
      if (query.value.cursor !== undefined && cursor === null) return invalidRequest('cursor');
      if ((await ctx.hot.firmaIdOf(licenseKey)) !== claims.firma_id) return forbidden;
      // counted before Postgres is read: a client paging past its limit costs the database nothing
      const counted = await count(claims.firma_id);
      const rate = counted?.rate ?? null;
      if (counted?.outcome === Outcome.OVER_RATE_LIMIT) {
        // held back before it is answered (HoldBack): a client paging in a loop slows itself down
        const held = counted.rate.resetMs > REFUSAL_HOLD_MS ? refusals.wait() : null;
        if (held !== null) await held;
        // the figures as counted, a second before the answer: the client waits up to a second longer, never too little
        return fields.on(rateLimited(counted.rate.resetMs), rate);
      }
      return pages.run(async () => {
        const [generation, rows] = await Promise.all([
          ctx.store.tokenGeneration(claims.firma_id), ctx.store.redemptions(claims.firma_id, pageSize + 1, cursor),
        ]);
        // Postgres holds every admin change before any instance applies it: a token of an older generation is revoked
        if (generation !== claims.gen) return fields.on(authReplies.INVALID_TOKEN, rate);
        const page = pageOf(rows, pageSize, (last) => encodeCursor({ usedAt: last.usedAt.toISOString(), tokenId: last.tokenId }));
        const items = page.items.map((r) => ({
          tokenId: r.tokenId, imzaTipi: r.imzaTipi, usedAt: r.usedAt.toISOString(), origin: r.origin,
          ...(r.documents === null ? {} : { documents: r.documents }),
          ...(r.releasedAt === null ? {} : { releasedAt: r.releasedAt.toISOString() }),
        }));
        return fields.on(reply(200, { success: true, data: { items, nextCursor: page.nextCursor } }), rate);
      });
    },
  };
}
