import type { Route } from '../http/server.js';
import { codeShape, reply } from '../http/reply.js';
import { type ApiContext, bearer, canonicalKey } from './context.js';
import { issueBadRequest, issueReplies, quotaErrors } from './results.js';
import { UUID } from './schemas.js';

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

function decodeCursor(text: string): Cursor | null {
  const [usedAt, tokenId] = Buffer.from(text, 'base64url').toString('utf8').split('|');
  if (!usedAt || !tokenId || Number.isNaN(Date.parse(usedAt))) return null;
  return { usedAt, tokenId };
}

/** GET /api/License/history/{licenseKey}: the license's redemptions, newest first. */
export function historyRoute(ctx: ApiContext): Route {
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
      const raw = req.params[0] as string;
      if (!UUID.test(raw)) {
        return invalidKey;
      }
      if ((await ctx.hot.firmaIdOf(canonicalKey(raw))) !== claims.firma_id) {
        return reply(403, { success: false, error: { code: 'FORBIDDEN', message: 'Bu lisansın geçmişine erişim yetkiniz yok' } });
      }
      const query = new URLSearchParams(req.query);
      const limitText = query.get('limit');
      const limit = limitText === null ? DEFAULT_LIMIT : Number(limitText);
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return issueBadRequest('limit');
      const cursorText = query.get('cursor');
      const cursor = cursorText ? decodeCursor(cursorText) : null;
      if (cursorText && cursor === null) return issueBadRequest('cursor');
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
