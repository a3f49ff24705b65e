import type postgres from 'postgres';
import type { Sql } from '../db/pg.js';
import { microsOf } from './keyset.js';
import { RATE_LIMIT_COLUMNS } from './rateLimits.js';

// The admin audit log (sql/008_admin_audit.sql): who changed which license, how, from where.
// A change and its record are one transaction (src/licenses/store.ts): the license row is
// read before and after the change in that transaction, and the fields that differ are
// written. The fields are read generically (every column of the row but the bookkeeping
// ones), so a column added to licenses is audited without a change here; a column holding
// a secret must be named in SECRET_COLUMNS, and one the admin API shows inside an object in
// GROUPED_COLUMNS.

/** The admin change recorded. */
export type AuditAction = 'create' | 'update' | 'add-quota';

/** Who made a change: the admin's name, the client's address as the service saw it, the purchase's Idempotency-Key. */
export interface AuditActor {
  admin: string;
  address: string;
  idempotencyKey: string | null;
}

/** A license's fields as the admin API names them, secrets included (never written: see masked). */
export type Snapshot = Record<string, unknown>;

/** Columns that are no admin's doing (the worker's count, versions, times) or the record's own (the key). */
const NOT_AUDITED = ['firma_id', 'license_key', 'used_quota', 'forfeited_quota', 'released_quota', 'packages_made', 'version', 'token_generation', 'created_at',
  'updated_at', 'usage_day', 'usage_day_redeemed', 'closed_day', 'closed_day_redeemed',
  'open_package_no', 'open_package_used', 'closed_package_no', 'closed_package_used'];

/** Columns holding a secret, by the name the admin API gives the field: recorded only as "changed". */
const SECRET_COLUMNS: Record<string, string> = { password_hash: 'password', webhook_secret: 'webhookSecret' };

/**
 * Columns the admin API shows as members of one object field, by column: the field and the
 * member. The record shows the whole object before and after when any member changed, as
 * the admin sent it (rateLimits: {getToken, signToken, validate, checkQuota}).
 */
const GROUPED_COLUMNS: Record<string, [field: string, member: string]> = Object.fromEntries(
  Object.entries(RATE_LIMIT_COLUMNS).map(([member, column]) => [column, ['rateLimits', member]]),
);

/** What a secret that changed reads in a record. */
export const CHANGED = 'changed';

/** A timestamptz as to_jsonb writes it ("2030-12-31T23:59:59.999+00:00"). */
const PG_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:\d\d$/;

function camel(column: string): string {
  return column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The row's audited fields under the admin API's names, instants as the API writes them. */
function snapshotOf(row: Record<string, unknown>): Snapshot {
  const out: Snapshot = {};
  // the groups' members in the order they are declared, whatever order the row's columns come in
  for (const [field, member] of Object.values(GROUPED_COLUMNS)) out[field] = { ...(out[field] as object | undefined), [member]: null };
  for (const [column, value] of Object.entries(row)) {
    const grouped = GROUPED_COLUMNS[column];
    if (grouped !== undefined) (out[grouped[0]] as Record<string, unknown>)[grouped[1]] = value ?? null;
    else out[SECRET_COLUMNS[column] ?? camel(column)] = typeof value === 'string' && PG_INSTANT.test(value) ? new Date(value).toISOString() : value;
  }
  return out;
}

/**
 * The license as it is now in this transaction, locked against other changes until it ends
 * (`for update`); null: no such license.
 */
export async function snapshot(tx: postgres.TransactionSql, licenseKey: string): Promise<Snapshot | null> {
  const rows = await tx.unsafe(
    `select to_jsonb(l) - $2::text[] as fields from licenses l where license_key = $1 for update`,
    [licenseKey, NOT_AUDITED as never],
  );
  return rows[0] ? snapshotOf(rows[0].fields as Record<string, unknown>) : null;
}

const isSecret = (field: string): boolean => Object.values(SECRET_COLUMNS).includes(field);

/** A field's value as a record shows it: a secret that is set reads "changed". */
function masked(field: string, value: unknown): unknown {
  return isSecret(field) && value !== null && value !== undefined ? CHANGED : value ?? null;
}

/** The fields that differ between two snapshots (before null: everything after), secrets masked. */
export function changes(before: Snapshot | null, after: Snapshot): { before: Snapshot | null; after: Snapshot } {
  const was: Snapshot = {};
  const is: Snapshot = {};
  for (const field of new Set([...Object.keys(before ?? {}), ...Object.keys(after)])) {
    const old = before?.[field] ?? null;
    const now = after[field] ?? null;
    if (before !== null && JSON.stringify(old) === JSON.stringify(now)) continue;
    if (before !== null) was[field] = masked(field, old);
    is[field] = masked(field, now);
  }
  return { before: before === null ? null : was, after: is };
}

/** Writes the record of a change, in the change's own transaction. */
export async function record(
  tx: postgres.TransactionSql, licenseKey: string, action: AuditAction, before: Snapshot | null, after: Snapshot, actor: AuditActor,
): Promise<void> {
  const diff = changes(before, after);
  await tx.unsafe(
    `insert into admin_audit (license_key, action, before, after, admin, address, idempotency_key)
     values ($1, $2, $3::jsonb, $4::jsonb, $5, $6, $7)`,
    // the snapshots as values: postgres.js writes a jsonb parameter as JSON itself
    [licenseKey, action, diff.before as never, diff.after as never, actor.admin, actor.address, actor.idempotencyKey],
  );
}

/** A record as GET /admin/v1/audit lists it. */
export interface AuditRecord {
  id: number;
  at: Date;
  /** its time in microseconds (Postgres's precision), in the next page's cursor beside its id (the admin lists' cursor shape) */
  atMicros: string;
  licenseKey: string;
  action: AuditAction;
  before: Snapshot | null;
  after: Snapshot;
  admin: string;
  address: string;
  idempotencyKey: string | null;
}

export interface AuditFilter {
  licenseKey: string | null;
  /** an RFC 3339 date-time, read by Postgres to its microsecond */
  since: string | null;
}

/** Reads the audit log, newest first (last written first), in keyset pages (the indexes of sql/008_admin_audit.sql). */
export class AuditLog {
  constructor(private readonly sql: Sql) {}

  /**
   * At most `limit` records before the record `afterId` (exclusive; null: from the newest).
   * Records are listed in the order they were written (id), not by time: the clocks of
   * concurrent changes may cross, their ids follow the order in which each took the
   * license's lock.
   */
  async records(filter: AuditFilter, limit: number, afterId: string | null): Promise<AuditRecord[]> {
    const params: unknown[] = [limit];
    const where: string[] = [];
    if (filter.licenseKey !== null) where.push(`license_key = $${params.push(filter.licenseKey)}`);
    if (filter.since !== null) where.push(`at >= $${params.push(filter.since)}::timestamptz`);
    if (afterId !== null) where.push(`id < $${params.push(afterId)}::int8`);
    const rows = await this.sql.unsafe(
      `select id::float8 as id, at, ${microsOf('at')}::text as at_micros, license_key, action, before, after,
         admin, address, idempotency_key
       from admin_audit ${where.length > 0 ? `where ${where.join(' and ')}` : ''}
       order by id desc
       limit $1`,
      params as never[],
    );
    return rows.map((r) => ({
      id: r.id as number,
      at: r.at as Date,
      atMicros: r.at_micros as string,
      licenseKey: r.license_key as string,
      action: r.action as AuditAction,
      before: (r.before as Snapshot | null) ?? null,
      after: r.after as Snapshot,
      admin: r.admin as string,
      address: r.address as string,
      idempotencyKey: (r.idempotency_key as string | null) ?? null,
    }));
  }
}
