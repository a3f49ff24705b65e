import { ADMIN_TOKEN, type Harness } from './harness.js';
import type { Answer } from './http.js';

// The admin audit log as its suites (test/routes/admin.audit.*) see it: a service with two
// named admins behind one trusted proxy hop (so a test chooses the client address the
// record must show), and the records as Postgres holds them.

export const BOB_TOKEN = 'bob-admin-token-0123456789';

/** The harness overrides: "admin" (the harness's ADMIN_TOKEN, so its helpers work) and "bob", one trusted proxy hop. */
export const TWO_ADMINS: Record<string, string> = {
  ADMIN_TOKEN: '', ADMIN_TOKENS: `admin:${ADMIN_TOKEN},bob:${BOB_TOKEN}`, TRUST_PROXY: '1',
};

/** An admin request from `address` (X-Forwarded-For, read with TRUST_PROXY=1) with `token`. */
export function adminFrom(
  h: Harness, address: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, token = ADMIN_TOKEN,
): Promise<Answer> {
  return h.request(method, path, body, { authorization: `Bearer ${token}`, 'x-forwarded-for': address, ...headers });
}

export interface Row {
  id: number;
  at: Date;
  license_key: string;
  action: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown>;
  admin: string;
  address: string;
  idempotency_key: string | null;
}

/** The records of one license (every record without one), oldest first, straight from Postgres. */
export async function auditRows(h: Harness, licenseKey?: string): Promise<Row[]> {
  const rows = await h.sql`
    select id::float8 as id, at, license_key, action, before, after, admin, address, idempotency_key from admin_audit
    ${licenseKey === undefined ? h.sql`` : h.sql`where license_key = ${licenseKey}`}
    order by id`;
  return rows as unknown as Row[];
}

/** How many records the log holds. */
export async function auditCount(h: Harness): Promise<number> {
  const [row] = await h.sql`select count(*)::int as n from admin_audit`;
  return row?.n as number;
}
