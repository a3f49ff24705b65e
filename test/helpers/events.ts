import { EventField, EventKind } from '../../src/redis/scripts.js';

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

/** The XADD field list of a usage event, with the field letters of src/redis/scripts.ts. */
export function eventFields(values: EventValues): string[] {
  const out: string[] = [];
  for (const [name, letter] of Object.entries(EventField)) {
    const value = values[name as keyof EventValues];
    if (value !== undefined) out.push(letter, String(value));
  }
  return out;
}
