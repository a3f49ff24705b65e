import type { Sql } from '../db/pg.js';
import { instantOfMicros, microsOf } from './keyset.js';
import { LICENSE_COLUMNS, licenseRowOf, type LicenseRow } from './licenseRow.js';

// What the admin lists read (GET /admin/v1/licenses, .../{key}/tokens): keyset pages over
// indexes (sql/006_admin_lists.sql), so a page costs the same on the first and the last.

/** A license with where it sorts: creation time in microseconds (Postgres's precision), then firma id. */
export interface ListedLicense {
  row: LicenseRow;
  createdMicros: string;
}

/** Where a page of licenses ended (exclusive), oldest first. */
export interface LicenseCursor {
  createdMicros: string;
  firmaId: string;
}

export type TokenStatus = 'issued' | 'used' | 'expired';

/** An issued sign token as the admin sees it: issued (unused, still valid), used, or expired (unused, past expiry). */
export interface IssuedToken {
  tokenId: string;
  issuedMicros: string;
  imzaTipi: number;
  status: TokenStatus;
  issuedAt: Date;
  expiresAt: Date | null;
  usedAt: Date | null;
  origin: string | null;
}

/** Where a page of tokens ended (exclusive), newest first: issue time in microseconds, then token id. */
export interface TokenCursor {
  issuedMicros: string;
  tokenId: string;
}

const UUID_TEXT = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const STATUS = `case when r.used_at is not null then 'used' when i.expires_at <= now() then 'expired' else 'issued' end`;

/**
 * The statement of AdminListing.tokens: $1 firma id, $2 limit, then with a cursor $3 its
 * issue time (microseconds) and $4 its token id, then with a status filter the status.
 * (Exported for the test that checks its plan reads the index.)
 */
export function tokensStatement(hasCursor: boolean, hasStatus: boolean): string {
  // the first condition bounds the index scan; the row comparison orders ties by token id
  const after = hasCursor
    ? `and i.issued_at <= ${instantOfMicros(3)}
       and (i.issued_at, i.token_id) < (${instantOfMicros(3)}, $4::text)`
    : '';
  const page = `select i.token_id, i.imza_tipi, i.issued_at, ${microsOf('i.issued_at')}::text as issued_micros,
         i.expires_at, r.used_at, r.origin, ${STATUS} as status
       from token_issues i
       left join lateral (
         -- the redemption, by its primary key: one partition's, pruned while the query runs
         -- (ids that are no UUID were never redeemed: sql/003)
         select used_at, origin from token_redemptions
         where token_id = case when i.token_id ~ '${UUID_TEXT}' then i.token_id::uuid end
       ) r on true
       where i.firma_id = $1 and i.issued_at is not null ${after}
       order by i.issued_at desc, i.token_id desc`;
  if (!hasStatus) return `${page} limit $2`;
  // the status filter goes outside a fence (offset 0), which keeps the index order: inside,
  // the planner guesses its selectivity low and reads and sorts all the license's tokens
  // instead of walking the index (the plan test: test/routes/admin.licenseTokens.happy)
  return `select * from (${page} offset 0) t where t.status = $${hasCursor ? 5 : 3}::text limit $2`;
}

export class AdminListing {
  constructor(private readonly sql: Sql) {}

  /** At most `limit` licenses after `after`, in creation order. */
  async licenses(limit: number, after: LicenseCursor | null): Promise<ListedLicense[]> {
    const rows = await this.sql.unsafe(
      `select ${LICENSE_COLUMNS}, ${microsOf('created_at')}::text as created_micros
       from licenses
       ${after ? `where (created_at, firma_id) > (${instantOfMicros(2)}, $3::text)` : ''}
       order by created_at, firma_id
       limit $1`,
      after ? [limit, after.createdMicros, after.firmaId] : [limit],
    );
    return rows.map((r) => ({ row: licenseRowOf(r), createdMicros: r.created_micros as string }));
  }

  /**
   * A license's issued tokens, newest first: at most `limit`, after `after`, of one status or
   * all. Read from the issues the usage worker wrote, each with its redemption if there is one
   * (the rows of the sign_tokens view that have an issue row: a redemption whose issue event
   * never reached Postgres, e.g. a dead letter, is not listed; every issue the worker writes
   * has its issue time).
   */
  async tokens(firmaId: string, limit: number, after: TokenCursor | null, status: TokenStatus | null): Promise<IssuedToken[]> {
    const params: unknown[] = [firmaId, limit];
    if (after) params.push(after.issuedMicros, after.tokenId);
    if (status) params.push(status);
    const rows = await this.sql.unsafe(tokensStatement(after !== null, status !== null), params as never[]);
    return rows.map((r) => ({
      tokenId: r.token_id as string,
      issuedMicros: r.issued_micros as string,
      imzaTipi: r.imza_tipi as number,
      status: r.status as TokenStatus,
      issuedAt: r.issued_at as Date,
      expiresAt: (r.expires_at as Date | null) ?? null,
      usedAt: (r.used_at as Date | null) ?? null,
      origin: (r.origin as string | null) ?? null,
    }));
  }
}
