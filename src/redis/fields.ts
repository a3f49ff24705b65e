// The letters of the Redis hashes and stream events the Lua scripts (lua/*.lua) read and
// write, each with its meaning. One concern: the layout of what the scripts store, which
// this code and the Lua must spell alike; callers (src/, bench/, test/) import it from here.

/** License hash {b}:l:<firmaId>, the request path's copy of a licenses row. */
export const LicenseField = {
  /** every package bought and every correction: the total before forfeits */
  totalQuota: 'q',
  /** redemptions counted in Redis: ahead of Postgres by what the usage worker has not written */
  usedQuota: 'u',
  isActive: 'a', // "1" or "0"
  expiryMs: 'x',
  /** allowed origins, as encodeDomains writes them (src/licenses/origin.ts) */
  domains: 'd',
  organizationName: 'n',
  licenseKey: 'k',
  /** licenses.version of the row copied: older rows never overwrite newer ones (lua/sync.lua) */
  version: 'v',
  /** licenses.token_generation: access tokens of an older one are revoked (lua/includes/issueToken.lua) */
  generation: 'g',
  /** admin changes in flight and the latest of their deadlines (lua/fence.lua) */
  fences: 'z',
  fenceDeadline: 'zd',
  /** units of expired packages never spent: counted in Redis first, like used (totalQuota = q - f) */
  forfeitedQuota: 'f',
  /** the package redemptions spend now: its number, expiry ms and units left (lua/includes/packages.lua) */
  packageNo: 'pn',
  packageExpiryMs: 'pe',
  packageLeft: 'pl',
  /** the number of the last package the copy holds: present in every copy written since packages exist */
  packagesMade: 'pm',
  /** releases a day the license allows (lua/release.lua; 0 or absent: none) */
  releasesPerDay: 'ra',
  /**
   * The license's own limits per window, read where the request is counted (ownLimit in
   * lua/includes/rateLimit.lua), so an admin change is in force on the next request of every
   * process: validate and sign (lua/includes/redeemToken.lua), sign-token
   * (lua/includes/issueToken.lua). "" = the deployment's RATE_*_PER_MIN: sync.lua writes only
   * the fields it is given, so a reset to the default is written, not deleted.
   */
  rateValidate: 'lv',
  rateSignToken: 'ls',
} as const;

/** Credentials hash {k:<licenseKey>}:c: what get-token needs, found by license key. */
export const CredentialsField = {
  firmaId: 'f',
  passwordHash: 'h',
  version: LicenseField.version,
  generation: LicenseField.generation,
  fences: LicenseField.fences,
  fenceDeadline: LicenseField.fenceDeadline,
  /** the license's own limits, as LicenseField's: get-token's tokens per key (lua/credentials.lua, lua/loginGranted.lua), check-quota (lua/checkQuota.lua) */
  rateGetToken: 'lg',
  rateCheckQuota: 'lq',
} as const;

/** check-quota's answer {k:<licenseKey>}:qa, shared by every process (lua/quotaAnswer.lua). */
export const QuotaAnswerField = {
  /** the version of the license row it was built from */
  version: LicenseField.version,
  /** the status line, e.g. "200 OK" */
  status: 's',
  /** the body up to its timestamp's value, which each answer adds when it is sent */
  head: 'b',
  /** its tag, which no other answer of the key shares: a process that holds it is told so instead of sent the answer */
  tag: 't',
} as const;

/**
 * A usage event on a stream {b}:ev, as issue.lua and redeem.lua add it: one field, named
 * for its kind (EventKind), whose value is the event's values in the order of
 * EventValues, separated by tabs. None of them can hold a tab or a line break: the ids are
 * the service's own, the numbers are digits, and an origin with a control character is
 * refused at the edge (src/usage/events.ts checks it all the same). One field instead of a
 * field per value: the usage worker decodes two strings per event instead of fourteen.
 */
export const EventKind = { issued: 'i', spent: 's', forfeited: 'f', released: 'l', used: 'u' } as const;

export const EventValues = {
  /** token id, firma id, imza tipi, issue time (ms since epoch), the token's expiry (ms) */
  issued: ['tokenId', 'firmaId', 'imzaTipi', 'atMs', 'expiresMs'],
  /**
   * a redemption: the package it spent, then as in used (redeem.lua writes this one; the package
   * first, so the line the usage worker sends Postgres is the value as it is)
   */
  spent: ['packageNo', 'tokenId', 'firmaId', 'imzaTipi', 'atMs', 'issuedMs', 'origin'],
  /**
   * a redemption as earlier versions wrote it (still read): token id, firma id, imza tipi,
   * redemption time, the token's iat (ms); then the origin, only when the client sent one (it
   * may be empty); the package followed as a field of its own (EVENT_PACKAGE), or not at all
   */
  used: ['tokenId', 'firmaId', 'imzaTipi', 'atMs', 'issuedMs', 'origin'],
  /** firma id, package number, units forfeited, when (ms since epoch): a package expired with units left (lua/includes/packages.lua) */
  forfeited: ['firmaId', 'packageNo', 'units', 'atMs'],
  /** token id, firma id, the package given the unit back, when (ms), the reason given (may be empty): lua/release.lua */
  released: ['tokenId', 'firmaId', 'packageNo', 'atMs', 'reason'],
} as const;

/** The field after a used event's values in events of an earlier version: the number of the package it spent ("" in none). */
export const EVENT_PACKAGE = 'p';

/**
 * The last field of a sign's used event: its receipt, the JSON payload the route signs
 * (lua/includes/redeemToken.lua). JSON text, so it may hold anything but a raw control
 * character; the usage worker keeps its digest and document count.
 */
export const EVENT_RECEIPT = 'r';

/** The separator of an event's values. */
export const EVENT_SEPARATOR = '\t';

/**
 * Events queued by versions before the one-field form: a field per value. Still read (a
 * stream may hold them across an upgrade, a dead letter may be replayed), never written.
 */
export const LegacyEventField = {
  kind: 'k', // EventKind
  tokenId: 't',
  firmaId: 'f',
  imzaTipi: 'i',
  /** when it happened, ms since epoch */
  atMs: 's',
  /** issued: the token's expiry, ms */
  expiresMs: 'e',
  /** used: when the token was issued (its iat), ms */
  issuedMs: 'c',
  /** used: the origin the client sent, when it sent one */
  origin: 'o',
} as const;

/** A token's field in a marker hash {b}:t:<minute>: "i" + epoch while issued (lua/includes/epoch.lua), then "u". */
export const Marker = { issuedPrefix: 'i', used: 'u' } as const;
