import { Type } from '@sinclair/typebox';

// Keyset paging, shared by the history and the admin lists: `?limit=` (default 50, at most
// 500) and `?cursor=`, the sort key of the previous page's last item, handed out opaque
// (base64url). A page is read with one row more than asked, to know whether another follows.

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** 1 to MAX_PAGE_LIMIT in decimal, no sign, no leading zero: exactly the page sizes there are. */
const PAGE_SIZE = '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$';

/** The query fields of a paged list; a route's query schema spreads them in. */
export const pageQueryFields = {
  limit: Type.Optional(Type.String({ pattern: PAGE_SIZE, description: `items per page, 1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT})` })),
  cursor: Type.Optional(Type.String({
    pattern: '^[A-Za-z0-9_-]{1,256}$',
    description: 'the nextCursor of the previous page, as handed out: any other value, even of this form, is 400 INVALID_REQUEST naming cursor',
  })),
};

/** The page size asked for (the schema admits only 1 to MAX_PAGE_LIMIT). */
export function pageLimit(raw: string | undefined): number {
  return raw === undefined ? DEFAULT_PAGE_LIMIT : Number(raw);
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
