import { EVENT_PACKAGE, EVENT_SEPARATOR, EventKind, LegacyEventField } from '../../src/redis/fields.js';

/** A usage event's values; a field left out is not written (malformed events leave some out). */
export interface EventValues {
  kind?: (typeof EventKind)[keyof typeof EventKind] | string;
  tokenId?: string;
  firmaId?: string;
  imzaTipi?: string | number;
  atMs?: number;
  expiresMs?: number;
  issuedMs?: number;
  origin?: string;
  /** a redemption: the package it spent */
  packageNo?: string | number;
}

function valueList(values: EventValues, kind: string): string[] {
  const last = kind === EventKind.issued ? values.expiresMs : values.issuedMs;
  const parts = [values.tokenId, values.firmaId, values.imzaTipi, values.atMs, last].map((v) => (v === undefined ? '' : String(v)));
  if (values.origin !== undefined) parts.push(values.origin);
  return parts;
}

/**
 * The XADD field list of a usage event as issue.lua and redeem.lua write it: one field
 * named for the kind, the values tab-separated (src/redis/fields.ts EventValues); a value
 * left out is an empty one. A redemption (kind used, the default) is written as redeem.lua
 * writes it: an event "s", its package first ("" when none is given).
 */
export function eventFields(values: EventValues): string[] {
  const kind = values.kind ?? EventKind.used;
  const parts = valueList(values, kind);
  if (kind === EventKind.used) return [EventKind.spent, [String(values.packageNo ?? ''), ...parts].join(EVENT_SEPARATOR)];
  return [kind, parts.join(EVENT_SEPARATOR)];
}

/** A redemption as earlier versions of redeem.lua wrote it (still read): an event "u", then its package as a field of its own when given. */
export function usedEventFields(values: EventValues): string[] {
  const out = [EventKind.used, valueList(values, EventKind.used).join(EVENT_SEPARATOR)];
  if (values.packageNo !== undefined) out.push(EVENT_PACKAGE, String(values.packageNo));
  return out;
}

/** The same event as versions before the one-field form queued it: a field per value (still read). */
export function legacyEventFields(values: EventValues): string[] {
  const out: string[] = [];
  for (const [name, letter] of Object.entries(LegacyEventField)) {
    const value = values[name as keyof EventValues];
    if (value !== undefined) out.push(letter, String(value));
  }
  return out;
}
