import { CredentialsField as C, LicenseField as L } from '../redis/fields.js';
import type { LicenseCopy, PackageCopy } from '../redis/scriptBuilders.js';
import type { LicenseRow } from './licenseRow.js';
import { encodeDomains } from './origin.js';
import { copiedLimit } from './rateLimits.js';

// What a Postgres row becomes in Redis: the fields of its license and credentials hashes,
// and the counts and packages a license hash is created or updated with. One concern: the
// translation of a row into its copy, free of I/O, apart from HotLicenses (./hot.ts), which
// decides when a copy is written and reads it back.

/**
 * A row's fields in the license hash (sync.lua adds the counts and packages when it creates
 * one); its total is before forfeits. The fields a redemption reads come first: a small hash
 * is searched from its start (lua/sync.lua).
 */
export function licenseFields(row: LicenseRow): (string | number)[] {
  return [L.totalQuota, row.totalQuota + row.forfeitedQuota, L.expiryMs, row.expiryDate.getTime(), L.isActive, row.isActive ? '1' : '0',
    L.domains, encodeDomains(row.domains), L.rateValidate, copiedLimit(row.rateLimits.validate),
    L.rateSignToken, copiedLimit(row.rateLimits.signToken), L.generation, row.tokenGeneration, L.organizationName, row.organizationName,
    L.licenseKey, row.licenseKey, L.releasesPerDay, row.releasesPerDay];
}

/** A row's fields in the credentials hash. */
export function credentialsFields(row: LicenseRow): (string | number)[] {
  return [C.firmaId, row.firmaId, C.passwordHash, row.passwordHash, C.generation, row.tokenGeneration,
    C.rateGetToken, copiedLimit(row.rateLimits.getToken), C.rateCheckQuota, copiedLimit(row.rateLimits.checkQuota)];
}

/** What the events still queued in a license's stream did that Postgres may not have written yet. */
export interface Queued {
  /** token id -> the package it spent ("" when not named) */
  redemptions: Map<string, string>;
  /** package number -> units forfeited */
  forfeits: Map<number, number>;
  /** token id -> the package its release gave the unit back */
  releases: Map<string, number>;
}

/**
 * The counts and packages a license hash is created with: Postgres's, less what the queued
 * events did that it has not written (redemptions it does not count, forfeits of packages it
 * has not marked forfeited).
 */
export function copyOf(row: LicenseRow, queued: Queued, counted: Set<string>, released: Set<string>): LicenseCopy {
  const spentOf = new Map<number, number>();
  let spent = 0;
  let unwrittenReleases = 0;
  for (const [tokenId, no] of queued.releases) {
    if (released.has(tokenId)) continue;
    spent--;
    unwrittenReleases++;
    spentOf.set(no, (spentOf.get(no) ?? 0) - 1);
  }
  for (const [tokenId, packageNo] of queued.redemptions) {
    if (counted.has(tokenId)) continue;
    spent++;
    // a redemption of an earlier version names no package: Postgres gives it the first with units left
    const no = packageNo === '' ? (row.packages.find((p) => p.used + p.forfeited < p.amount)?.no ?? 0) : Number(packageNo);
    spentOf.set(no, (spentOf.get(no) ?? 0) + 1);
  }
  let forfeited = 0;
  const packages: PackageCopy[] = [];
  for (const p of row.packages) {
    const unwritten = p.forfeited === 0 ? (queued.forfeits.get(p.no) ?? 0) : 0;
    forfeited += unwritten;
    const left = p.amount - p.used - p.forfeited - (spentOf.get(p.no) ?? 0) - unwritten;
    // a spent package stays until it expires: a release may give it a unit back
    if (left > 0 || p.expiresAt.getTime() > Date.now()) packages.push({ no: p.no, expiresMs: p.expiresAt.getTime(), left: Math.max(0, left) });
  }
  return {
    usedQuota: row.usedQuota + spent, releasedQuota: row.releasedQuota + unwrittenReleases, forfeitedQuota: row.forfeitedQuota + forfeited,
    packagesMade: row.packagesMade, packages,
  };
}

/** What an update of an existing hash sends: the packages with units left as Postgres has them (Redis adds only those it lacks). */
export function updateOf(row: LicenseRow): LicenseCopy {
  const packages = row.packages.filter((p) => p.used + p.forfeited < p.amount)
    .map((p) => ({ no: p.no, expiresMs: p.expiresAt.getTime(), left: p.amount - p.used - p.forfeited }));
  return { usedQuota: 'unknown', releasedQuota: 0, forfeitedQuota: 0, packagesMade: row.packagesMade, packages };
}
