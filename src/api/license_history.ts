import type { Route } from '../http/server.js';
import { codeShape, reply } from '../http/reply.js';
import type { ApiContext } from './context.js';
import { issueBadRequest, issueReplies, quotaErrors } from './results.js';
import { bearer, HistoryQuery, isInstant, licenseKeyParam, queryParser } from './schemas.js';

const DEFAULT_LIMIT = 50;
const invalidKey = reply(400, { success: false, error: { code: 'INVALID_LICENSE_KEY', message: quotaErrors.INVALID_LICENSE_KEY[1] } });
const MAX_LIMIT = 500;

interface Cursor {
  usedAt: string;
  tokenId: string;
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.usedAt}|${c.tokenId}`).toString('base64url');
}

/** What encodeCursor made: an instant as toISOString writes it, and a token id. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([A-Za-z0-9_-]{1,64})$/;

/** The cursor, or null unless it decodes to exactly what this server hands out. */
function decodeCursor(text: string): Cursor | null {
  const m = CURSOR.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (m === null) return null;
  const [, usedAt, tokenId] = m as unknown as [string, string, string];
  // the years and days the server can have written (year 0000 is no Postgres date)
  if (!isInstant(usedAt) || new Date(usedAt).toISOString() !== usedAt) return null;
  return { usedAt, tokenId };
}

/** GET /api/License/history/{licenseKey}: the license's redemptions, newest first. */
export function historyRoute(ctx: ApiContext): Route {
  const parseQuery = queryParser(HistoryQuery);
  return {
    method: 'get',
    path: '/api/license/history/:licenseKey',
    errors: codeShape,
    needsAuthorization: true,
    needsQuery: true,
    async handler(req) {
      const token = bearer(req.authorization);
      const claims = token === null ? null : ctx.tokens.verifyAccessToken(token);
      if (claims === null) return issueReplies.INVALID_TOKEN;
      const licenseKey = licenseKeyParam(req.params[0]);
      if (licenseKey === null) return invalidKey;
      const query = parseQuery(req.query);
      if (!query.ok) return issueBadRequest(query.field);
      const limit = query.value.limit === undefined ? DEFAULT_LIMIT : Number(query.value.limit);
      if (limit > MAX_LIMIT) return issueBadRequest('limit');
      const cursor = query.value.cursor === undefined ? null : decodeCursor(query.value.cursor);
      if (query.value.cursor !== undefined && cursor === null) return issueBadRequest('cursor');
      if ((await ctx.hot.firmaIdOf(licenseKey)) !== claims.firma_id) {
        return reply(403, { success: false, error: { code: 'FORBIDDEN', message: 'Bu lisansın geçmişine erişim yetkiniz yok' } });
      }
      const rows = await ctx.sql`
        select token_id, imza_tipi, used_at, origin from sign_tokens
        where firma_id = ${claims.firma_id} and status = 'used'
          ${cursor ? ctx.sql`and (used_at, token_id) < (${cursor.usedAt}::timestamptz, ${cursor.tokenId})` : ctx.sql``}
        order by used_at desc, token_id desc
        limit ${limit + 1}`;
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const items = page.map((r) => ({
        tokenId: r.token_id as string,
        imzaTipi: r.imza_tipi as number,
        usedAt: (r.used_at as Date).toISOString(),
        origin: (r.origin as string | null) ?? null,
      }));
      const nextCursor = rows.length > limit && last
        ? encodeCursor({ usedAt: (last.used_at as Date).toISOString(), tokenId: last.token_id as string })
        : null;
      return reply(200, { success: true, data: { items, nextCursor } });
    },
  };
}
