import { EVENT_PACKAGE, EVENT_RECEIPT, EVENT_SEPARATOR, EventKind, EventValues, LegacyEventField as L } from '../redis/fields.js';
import { receiptFacts, type ReceiptFacts } from './receipts.js';

// Reading usage events off a stream: the one-field form the scripts write (src/redis/fields.ts
// EventValues), and the forms of earlier versions (a field per value; a redemption without its
// package, or with it as a second field). All become the same thing: the event's kind and its
// values in the one-field form, a redemption's with its package first (EventValues.spent),
// which is what Postgres is sent (src/usage/persist.ts splits them there), so the worker
// handles two strings per event. A sign's redemption carries its receipt as a second field:
// read here into what Postgres keeps of it (src/usage/receipts.ts).

/** An event as read from a usage stream. */
export interface QueuedEvent {
  stream: string;
  id: string;
  /** field, value, field, value... as XADD wrote them */
  fields: string[];
}

export type UsageEvent =
  | (QueuedEvent & {
      kind: 'issued' | 'used' | 'forfeited' | 'released';
      /**
       * the values, tab-separated, in the order of EventValues (a redemption's: of EventValues.spent,
       * its package "" when the event named none: events of earlier versions)
       */
      values: string;
      /** a sign's redemption: what Postgres keeps of its receipt */
      receipt?: ReceiptFacts;
    })
  /** bad: fields the worker cannot read (a dead letter); gone: deleted while pending (nothing to write) */
  | (QueuedEvent & { kind: 'bad' | 'gone' });

// Token and firma ids present; as many values as the kind has (a used event's origin is
// optional); no line break anywhere, since a batch's values travel to Postgres one a line.
// What the values hold is Postgres's to judge: a value it refuses makes a dead letter.
const ISSUED_VALUES = /^[^\t\n]+\t[^\t\n]+(?:\t[^\t\n]*){3}$/;
const FORFEITED_VALUES = /^[^\t\n]+\t\d{1,9}\t\d{1,15}\t\d{1,15}$/;
const PACKAGE_NO = /^\d{0,9}$/;
const RELEASED_VALUES = /^[^\t\n]+\t[^\t\n]+\t\d{1,9}\t\d{1,15}\t[^\t\n]*$/;
const USED_VALUES = /^[^\t\n]+\t[^\t\n]+(?:\t[^\t\n]*){3,4}$/;
const SPENT_VALUES = /^\d{0,9}\t[^\t\n]+\t[^\t\n]+(?:\t[^\t\n]*){3,4}$/;

/** A stream entry's field list as a record (the last value of a repeated field wins). */
export function fieldRecord(fields: readonly string[]): Record<string, string> {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
  return f;
}

const hasBreak = (value: string | undefined) => value !== undefined && (value.includes(EVENT_SEPARATOR) || value.includes('\n'));

/** A field-per-value event in the one-field form, or null when it cannot be written as one. */
function legacyValues(fields: readonly string[]): { kind: string; values: string } | null {
  const f = fieldRecord(fields);
  const kind = f[L.kind];
  const tokenId = f[L.tokenId];
  const firmaId = f[L.firmaId];
  if ((kind !== EventKind.issued && kind !== EventKind.used) || !tokenId || !firmaId) return null;
  const last = kind === EventKind.issued ? f[L.expiresMs] : f[L.issuedMs];
  const parts = [tokenId, firmaId, f[L.imzaTipi] ?? '0', f[L.atMs] ?? '0', last ?? ''];
  if (kind === EventKind.used && f[L.origin] !== undefined) parts.push(f[L.origin] as string);
  if (parts.some(hasBreak)) return null;
  if (kind === EventKind.used) parts.unshift('');
  return { kind, values: parts.join(EVENT_SEPARATOR) };
}

/**
 * A redemption's fields after its values: in a used event of an earlier version the package
 * it spent ("p", or none), then a sign's receipt ("r"); null when they are neither.
 */
function usedExtras(fields: string[], packaged: boolean): { packageNo: string; receipt: string | null } | null {
  let at = 2;
  let packageNo = '';
  if (!packaged && fields[at] === EVENT_PACKAGE) {
    packageNo = fields[at + 1] as string;
    if (!PACKAGE_NO.test(packageNo)) return null;
    at += 2;
  }
  if (at === fields.length) return { packageNo, receipt: null };
  if (at + 2 === fields.length && fields[at] === EVENT_RECEIPT) return { packageNo, receipt: fields[at + 1] as string };
  return null;
}

/** A stream entry as the worker reads it; fields null: deleted while it was pending. */
export function decodeEvent(stream: string, id: string, fields: string[] | null): UsageEvent {
  if (fields === null) return { stream, id, fields: [], kind: 'gone' };
  let kind = fields[0];
  let values = fields[1];
  const redemption = kind === EventKind.spent || kind === EventKind.used;
  const extras = redemption && fields.length >= 2 ? usedExtras(fields, kind === EventKind.spent) : null;
  const oneField = fields.length === 2 || extras !== null;
  if (!oneField || (kind !== EventKind.issued && !redemption && kind !== EventKind.forfeited && kind !== EventKind.released)) {
    const legacy = legacyValues(fields);
    if (legacy === null) return { stream, id, fields, kind: 'bad' };
    ({ kind, values } = legacy);
  } else if (kind === EventKind.used) {
    if (!USED_VALUES.test(values as string)) return { stream, id, fields, kind: 'bad' };
    values = `${extras?.packageNo ?? ''}${EVENT_SEPARATOR}${values as string}`;
  }
  if (kind === EventKind.issued) {
    return ISSUED_VALUES.test(values as string) ? { stream, id, fields, kind: 'issued', values: values as string } : { stream, id, fields, kind: 'bad' };
  }
  if (kind === EventKind.forfeited) {
    return FORFEITED_VALUES.test(values as string) ? { stream, id, fields, kind: 'forfeited', values: values as string } : { stream, id, fields, kind: 'bad' };
  }
  if (kind === EventKind.released) {
    return RELEASED_VALUES.test(values as string) ? { stream, id, fields, kind: 'released', values: values as string } : { stream, id, fields, kind: 'bad' };
  }
  if (!SPENT_VALUES.test(values as string)) return { stream, id, fields, kind: 'bad' };
  if (!extras?.receipt) return { stream, id, fields, kind: 'used', values: values as string };
  const receipt = receiptFacts(extras.receipt);
  return receipt === null ? { stream, id, fields, kind: 'bad' } : { stream, id, fields, kind: 'used', values: values as string, receipt };
}

/**
 * A stream entry's field lists, one per event: an entry of redemptions (kind s, no receipt)
 * may hold several, a line each, which is how a script call that redeemed several tokens can
 * queue them in one entry; every other entry is one event. Readers take entries through this,
 * so an entry of several lines is never read as one malformed event.
 */
export function entryEvents(fields: string[]): string[][] {
  const values = fields[1];
  if (fields.length !== 2 || fields[0] !== EventKind.spent || values === undefined || !values.includes('\n')) return [fields];
  return values.split('\n').map((line) => [EventKind.spent, line]);
}

/** A stream entry as the worker reads it: its events (several lines, several events: entryEvents), each with the entry's id. */
export function decodeEntry(stream: string, id: string, fields: string[] | null): UsageEvent[] {
  if (fields === null) return [decodeEvent(stream, id, null)];
  return entryEvents(fields).map((one) => decodeEvent(stream, id, one));
}

/** An event's values by name (src/redis/fields.ts EventValues), read from its fields (either form); null: not a readable event. */
export function readEvent(fields: string[]): ({ kind: 'issued' | 'used' | 'forfeited' | 'released' } & Partial<Record<(typeof EventValues)[keyof typeof EventValues][number], string>>) | null {
  const event = decodeEvent('', '', fields);
  if (event.kind !== 'issued' && event.kind !== 'used' && event.kind !== 'forfeited' && event.kind !== 'released') return null;
  const names = EventValues[event.kind === 'used' ? 'spent' : event.kind];
  const values = event.values.split(EVENT_SEPARATOR);
  const out: Record<string, string> = {};
  for (let i = 0; i < values.length && i < names.length; i++) out[names[i] as string] = values[i] as string;
  return { kind: event.kind, ...out };
}

/** The token and firma ids of a redemption event (either form), and the package it spent ("": not named); null for any other entry. */
export function redemptionOf(fields: string[]): { tokenId: string; firmaId: string; packageNo: string } | null {
  const event = decodeEvent('', '', fields);
  if (event.kind !== 'used') return null;
  const [packageNo, tokenId, firmaId] = event.values.split(EVENT_SEPARATOR, 3) as [string, string, string];
  return { tokenId, firmaId, packageNo };
}

/** A release event's token and firma ids and package number; null for any other entry. */
export function releaseOf(fields: string[]): { tokenId: string; firmaId: string; packageNo: number } | null {
  const event = decodeEvent('', '', fields);
  if (event.kind !== 'released') return null;
  const [tokenId, firmaId, packageNo] = event.values.split(EVENT_SEPARATOR, 3) as [string, string, string];
  return { tokenId, firmaId, packageNo: Number(packageNo) };
}

/** A forfeit event's firma id, package number and units; null for any other entry. */
export function forfeitOf(fields: string[]): { firmaId: string; packageNo: number; units: number } | null {
  const event = decodeEvent('', '', fields);
  if (event.kind !== 'forfeited') return null;
  const [firmaId, packageNo, units] = event.values.split(EVENT_SEPARATOR, 3) as [string, string, string];
  return { firmaId, packageNo: Number(packageNo), units: Number(units) };
}
