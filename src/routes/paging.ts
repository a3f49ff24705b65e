import { Type } from '@sinclair/typebox';

// Keyset paging, shared by the history and the admin lists: `?limit=` (default 50, at most
// 500) and `?cursor=`, the sort key of the previous page's last item, handed out opaque
// (base64url). A page is read with one row more than asked, to know whether another follows.

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** The query fields of a paged list; a route's query schema spreads them in. */
export const pageQueryFields = {
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: 'items per page, 1 to 500 (default 50)' })),
  cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,256}$', description: 'the nextCursor of the previous page' })),
};

/** The page size asked for (the schema admits 1-999), or null when over the maximum. */
export function pageLimit(raw: string | undefined): number | null {
  const limit = raw === undefined ? DEFAULT_PAGE_LIMIT : Number(raw);
  return limit > MAX_PAGE_LIMIT ? null : limit;
}

/**
 * The cursor shape of the admin lists: a time in microseconds since the epoch, and the
 * text id of the page's last item (no control character, bounded).
 */
// eslint-disable-next-line no-control-regex -- refusing control characters is the point
export const MICROS_AND_ID = /^(\d{1,17})\|([^\u0000-\u001f\u007f]{1,200})$/;

/** A cursor from the parts of a sort key (only the last part may hold "|"). */
export function encodeCursor(...parts: string[]): string {
  return Buffer.from(parts.join('|'), 'utf8').toString('base64url');
}

/** The parts `shape`'s groups capture, or null unless the cursor decodes to what it describes. */
export function decodeCursor(text: string, shape: RegExp): string[] | null {
  const m = shape.exec(Buffer.from(text, 'base64url').toString('utf8'));
  return m === null ? null : m.slice(1).map((part) => part ?? '');
}

/** Rows read with one more than `limit`: the page and the cursor of the next one (null: no more). */
export function pageOf<T>(rows: readonly T[], limit: number, cursorOf: (last: T) => string): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
