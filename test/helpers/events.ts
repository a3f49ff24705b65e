import { EVENT_SEPARATOR, EventKind, LegacyEventField } from '../../src/redis/scripts.js';

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
}

/**
 * The XADD field list of a usage event as issue.lua and redeem.lua write it: one field
 * named for the kind, the values tab-separated (src/redis/scripts.ts EventValues); a value
 * left out is an empty one.
 */
export function eventFields(values: EventValues): string[] {
  const kind = values.kind ?? EventKind.used;
  const last = kind === EventKind.issued ? values.expiresMs : values.issuedMs;
  const parts = [values.tokenId, values.firmaId, values.imzaTipi, values.atMs, last].map((v) => (v === undefined ? '' : String(v)));
  if (values.origin !== undefined) parts.push(values.origin);
  return [kind, parts.join(EVENT_SEPARATOR)];
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
