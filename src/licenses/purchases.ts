import type postgres from 'postgres';
import { LICENSE_COLUMNS, licenseRowOf, type LicenseRow } from './licenseRow.js';

// A purchase as a transaction writes it: the package, its ledger entry and the credit to
// the license, once per idempotency key. One concern: the statements a purchase is made of,
// run inside the caller's transaction (LicenseStore.create and addQuota, ./store.ts), which
// holds the audit record and decides what rolls back.

/** A credited purchase: the license after it; replayed when its idempotency key had credited it before (nothing credited now). */
export type Purchase = LicenseRow & { replayed: boolean };

/** A purchase as the admin makes it: a package of `add` units, expiring at expiresAt (null: with the license). */
export interface NewPackage {
  add: number;
  expiresAt: Date | null;
  note: string | null;
}

/** Thrown inside a purchase's transaction to roll it back: the deadline passed first. */
export class TooLate extends Error {}

/**
 * Adds a package to a license, with its purchase entry in the ledger, holding the
 * license's row lock: the package takes the next number, and the ledger's balance is the
 * license's as it then stands.
 */
export async function addPackage(tx: postgres.TransactionSql, firmaId: string, pkg: NewPackage, actor: string): Promise<void> {
  await tx.unsafe(
    `with made as (
       update licenses set packages_made = packages_made + 1 where firma_id = $1
       returning packages_made, expiry_date, total_quota - used_quota as balance
     ), pkg as (
       insert into license_packages (firma_id, package_no, amount, expires_at, note)
       select $1, packages_made, $2, coalesce($3::timestamptz, expiry_date), $4 from made
       returning package_no
     )
     insert into license_ledger (firma_id, kind, amount, balance_after, package_no, actor, note)
     select $1, 'purchase', $2, made.balance, pkg.package_no, $5, $4 from made, pkg`,
    [firmaId, pkg.add, pkg.expiresAt, pkg.note, actor],
  );
}

/**
 * Credits a purchase, once per idempotency key: a retry with the key credits nothing and
 * returns the license as it is, marked replayed. 'reused': the key was used for another purchase.
 * null: no such license, or past the deadline.
 */
export async function credit(
  tx: postgres.TransactionSql, licenseKey: string, pkg: NewPackage, deadlineMs: number, idempotencyKey: string | null, actor: string,
): Promise<Purchase | 'reused' | null> {
  const target = await tx.unsafe(`select firma_id from licenses where license_key = $1 for update`, [licenseKey]);
  const firmaId = target[0]?.firma_id as string | undefined;
  if (firmaId === undefined) return null;
  if (idempotencyKey !== null) {
    const recorded = await tx.unsafe(
      `insert into quota_purchases (idempotency_key, license_key, add, expires_at, note, whole) values ($1, $2, $3, $4, $5, true)
       on conflict (idempotency_key) do nothing returning idempotency_key`,
      [idempotencyKey, licenseKey, pkg.add, pkg.expiresAt, pkg.note],
    );
    if (recorded.length === 0) {
      // the same purchase is the same license, amount, expiry and note (sql/017_purchase_fields.sql)
      const earlier = await tx.unsafe(
        `select 1 from quota_purchases where idempotency_key = $1 and license_key = $2 and add = $3
           and (not whole or (expires_at is not distinct from $4 and note is not distinct from $5))`,
        [idempotencyKey, licenseKey, pkg.add, pkg.expiresAt, pkg.note],
      );
      if (earlier.length === 0) return 'reused';
      const rows = await tx.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
      return { ...licenseRowOf(rows[0] as Record<string, unknown>), replayed: true };
    }
  }
  const credited = await tx.unsafe(
    `update licenses set total_quota = total_quota + $2, version = version + 1, updated_at = now()
     where firma_id = $1 and clock_timestamp() < to_timestamp($3::float8 / 1000) returning firma_id`,
    [firmaId, pkg.add, deadlineMs],
  );
  if (credited.length === 0) throw new TooLate();
  await addPackage(tx, firmaId, pkg, actor);
  const rows = await tx.unsafe(`select ${LICENSE_COLUMNS} from licenses where firma_id = $1`, [firmaId]);
  return { ...licenseRowOf(rows[0] as Record<string, unknown>), replayed: false };
}
