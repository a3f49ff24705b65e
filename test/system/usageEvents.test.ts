import { createHash } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { EVENT_SEPARATOR, EventKind } from '../../src/redis/fields.js';
import { decodeEntry, decodeEvent, entryEvents, readEvent } from '../../src/usage/events.js';
import { eventFields, legacyEventFields, usedEventFields, type EventValues } from '../helpers/events.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';

// Reading usage events (src/usage/events.ts), property by property: whatever a stream holds,
// the worker reads it without throwing, and what it sends Postgres is framed right (one
// event a line, its values tab-separated) or the event is a dead letter.

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const settings = { seed: FUZZ_SEED, numRuns: RUNS };

/** Any string, control characters, tabs, line breaks and NUL included. */
const anyText = fc.string({ unit: 'binary', maxLength: 40 });
/** A value as the scripts can write it: no tab, no line break. */
const clean = (min = 0) => fc.string({ minLength: min, maxLength: 40 }).filter((s) => !/[\t\n]/.test(s));

const goodEvent = fc.record({
  kind: fc.constantFrom(EventKind.issued, EventKind.used),
  tokenId: clean(1),
  firmaId: clean(1),
  imzaTipi: fc.constantFrom(0, 1),
  atMs: fc.nat(),
  expiresMs: fc.nat(),
  issuedMs: fc.nat(),
  origin: fc.option(clean(), { nil: undefined }),
  packageNo: fc.option(fc.nat({ max: 999_999_999 }), { nil: undefined }),
}).map((v): EventValues => (v.kind === EventKind.issued ? { ...v, origin: undefined, packageNo: undefined } : v));

t.test('an event the scripts can write reads back value for value, in every form', async (t) => {
  fc.assert(fc.property(goodEvent, (v) => {
    const issued = v.kind === EventKind.issued;
    // as the scripts write it now; a redemption as earlier versions did (its package a field of
    // its own); a field per value (no package)
    const forms = issued ? [eventFields(v), legacyEventFields(v)] : [eventFields(v), usedEventFields(v), legacyEventFields(v)];
    for (const [i, fields] of forms.entries()) {
      const read = readEvent(fields);
      if (read === null) return false;
      if (read.kind !== (issued ? 'issued' : 'used') || read.tokenId !== v.tokenId || read.firmaId !== v.firmaId) return false;
      if (read.imzaTipi !== String(v.imzaTipi) || read.atMs !== String(v.atMs)) return false;
      if (issued ? read.expiresMs !== String(v.expiresMs) : read.issuedMs !== String(v.issuedMs)) return false;
      if (!issued && read.origin !== v.origin) return false; // undefined when none was sent, '' when an empty one was
      if (!issued && read.packageNo !== (i === 2 ? '' : String(v.packageNo ?? ''))) return false;
    }
    // every form gives Postgres the same line (the field-per-value form: one without a package)
    const lines = forms.map((fields) => decodeEvent('s', '1-0', fields)).map((e) => ('values' in e ? `${e.kind}:${e.values}` : e.kind));
    const unpackaged = issued ? lines[0] : `used:${EVENT_SEPARATOR}${(lines[0] as string).split(EVENT_SEPARATOR).slice(1).join(EVENT_SEPARATOR)}`;
    return lines[0] === lines[1] && (issued || lines[2] === unpackaged) && (issued || lines[0]?.startsWith(`used:${v.packageNo ?? ''}${EVENT_SEPARATOR}`));
  }), settings);
  t.pass(`${RUNS} events of each kind, seed ${FUZZ_SEED}`);
});

t.test('any field list at all: read without throwing, and framed right or refused', async (t) => {
  const fieldLists = fc.oneof(
    fc.array(anyText, { maxLength: 16 }),
    fc.tuple(fc.constantFrom('i', 's', 'u', 'k', 'x', ''), anyText).map(([k, v]) => [k, v]),
    fc.tuple(fc.constantFrom('s', 'u'), anyText, fc.constantFrom('p', 'r', 'x'), anyText),
    goodEvent.chain((v) => fc.tuple(fc.constantFrom(legacyEventFields(v), eventFields(v), usedEventFields(v)), fc.nat(15), anyText)
      .map(([fields, i, junk]) => fields.map((f, j) => (j === i ? junk : f)))),
  );
  fc.assert(fc.property(fieldLists, (fields) => {
    const e = decodeEvent('s', '1-0', fields);
    if (e.kind === 'bad') return true;
    if (e.kind !== 'issued' && e.kind !== 'used') return false;
    if (e.values.includes('\n')) return false;
    const parts = e.values.split(EVENT_SEPARATOR);
    if (e.kind === 'issued') return parts[0] !== '' && parts[1] !== '' && parts.length === 5;
    // a redemption: its package (digits, or "" when it named none), then as an issued event, and perhaps an origin
    const [packageNo, token, firma] = parts;
    return /^\d{0,9}$/.test(packageNo as string) && token !== '' && firma !== '' && (parts.length === 6 || parts.length === 7);
  }), settings);
  t.pass(`${RUNS} field lists, seed ${FUZZ_SEED}`);
});

t.test('a deleted entry is gone, not bad; an event lacking its ids is bad', async (t) => {
  t.equal(decodeEvent('s', '1-0', null).kind, 'gone');
  t.equal(decodeEvent('s', '1-0', ['u', `\tfirma\t0\t1\t2`]).kind, 'bad', 'no token id');
  t.equal(decodeEvent('s', '1-0', ['i', `tok\tfirma\t0\t1`]).kind, 'bad', 'a value short');
  t.equal(decodeEvent('s', '1-0', ['i', `tok\tfirma\t0\t1\t2\textra`]).kind, 'bad', 'an issued event has no origin');
  t.equal(decodeEvent('s', '1-0', ['u', `tok\tfirma\t0\t1\t2\torigin\twith a tab`]).kind, 'bad', 'a tab in the origin');
  t.equal(decodeEvent('s', '1-0', ['s', `\ttok\tfirma\t0\t1\t2`]).kind, 'used', 'a redemption that names no package');
  t.equal(decodeEvent('s', '1-0', ['s', `1x\ttok\tfirma\t0\t1\t2`]).kind, 'bad', 'a package that is not a number');
  t.equal(decodeEvent('s', '1-0', ['s', `1\t\tfirma\t0\t1\t2`]).kind, 'bad', 'a redemption without its token id');
  t.equal(decodeEvent('s', '1-0', ['s', `tok\tfirma\t0\t1\t2`]).kind, 'bad', 'a redemption without its package');
  t.equal(decodeEvent('s', '1-0', ['s', `1\ttok\tfirma\t0\t1\t2`, 'p', '1']).kind, 'bad', 'a package named twice');
  t.equal(decodeEvent('s', '1-0', ['u', `tok\tfirma\t0\t1\t2`, 'p', '1x']).kind, 'bad', 'an earlier version\'s package that is not a number');
  t.equal(decodeEvent('s', '1-0', legacyEventFields({ kind: 'u', tokenId: 'tok', firmaId: 'f', origin: 'a\nb' })).kind, 'bad', 'a line break in an old-form value');
});

t.test('a sign\'s used event carries its receipt: read into its document count and digest, or a dead letter', async (t) => {
  const values = eventFields({ tokenId: 'tok', firmaId: 'firma', imzaTipi: 0, atMs: 1, issuedMs: 2, packageNo: 3 });
  const receipt = '{"typ":"receipt","iss":"s","jti":"tok","firma_id":"firma","imza_tipi":0,"documents":[{"name":"ş.pdf","sha256":"'
    + 'a'.repeat(64) + '"},{"name":"b","sha256":"' + 'b'.repeat(64) + '"}],"iat":1,"used_quota":1,"remaining_quota":0}';
  const e = decodeEvent('s', '1-0', [...values, 'r', receipt]);
  t.equal(e.kind, 'used');
  t.same(e.kind === 'used' ? e.receipt : null, { documents: 2, sha256: createHash('sha256').update(Buffer.from(receipt, 'utf8')).digest('hex') },
    'two documents, the SHA-256 of the payload\'s UTF-8 bytes');
  t.equal(e.kind === 'used' ? e.values : '', values[1], 'the values as without a receipt');
  const earlier = decodeEvent('s', '1-0', [...usedEventFields({ tokenId: 'tok', firmaId: 'firma', imzaTipi: 0, atMs: 1, issuedMs: 2, packageNo: 3 }), 'r', receipt]);
  t.same(earlier, { ...e, fields: earlier.fields }, 'an earlier version\'s event (its package a field of its own): the same line and receipt');
  const plain = decodeEvent('s', '1-0', values);
  t.same([plain.kind, plain.kind === 'used' ? plain.receipt : null], ['used', undefined], 'a validate\'s event: no receipt');
  for (const [what, bad] of [['not JSON', '{"typ":"receipt"'], ['no documents', '{"typ":"receipt"}'], ['no document', '{"typ":"receipt","documents":[]}'],
    ['another typ', '{"typ":"license","documents":[{}]}'], ['null', 'null']] as const) {
    t.equal(decodeEvent('s', '1-0', [...values, 'r', bad]).kind, 'bad', `a receipt ${what}: a dead letter`);
  }
  t.equal(decodeEvent('s', '1-0', [...values, 'x', receipt]).kind, 'bad', 'a second field of another name: a dead letter');
  t.equal(decodeEvent('s', '1-0', ['i', 'tok\tfirma\t0\t1\t2', 'r', receipt]).kind, 'bad', 'an issued event carries no receipt');
});

t.test('an entry of several redemption lines reads as those events, each with the entry\'s id; any other entry as one event', async (t) => {
  const spent = goodEvent.filter((v) => v.kind === EventKind.used).map((v) => eventFields(v));
  fc.assert(fc.property(fc.array(spent, { minLength: 2, maxLength: 8 }), fc.option(fc.nat(7), { nil: undefined }), anyText, (events, junkAt, junk) => {
    const lines = events.map((fields) => fields[1] as string);
    if (junkAt !== undefined && junkAt < lines.length) lines[junkAt] = junk.replace(/\n/g, '');
    const read = decodeEntry('s', '7-1', [EventKind.spent, lines.join('\n')]);
    if (read.length !== lines.length) return false;
    // line by line exactly what that line alone, as an entry of its own, reads as
    return read.every((e, i) => {
      const alone = decodeEvent('s', '7-1', [EventKind.spent, lines[i] as string]);
      return e.id === '7-1' && e.kind === alone.kind && ('values' in e ? e.values : '') === ('values' in alone ? alone.values : '')
        && e.fields[1] === lines[i];
    });
  }), settings);
  const one = eventFields({ tokenId: 'tok', firmaId: 'firma', imzaTipi: 1, atMs: 2, issuedMs: 1 });
  t.same(entryEvents(one), [one], 'a one-line redemption is one event');
  const withReceipt = [...one, 'r', 'a\nb'];
  t.same(entryEvents(withReceipt), [withReceipt], 'a sign\'s redemption (its receipt a field of its own) is one event');
  const issued = [EventKind.issued, 'a\tb\tc\td\te\nf\tg\th\ti\tj'];
  t.same(entryEvents(issued), [issued], 'only redemptions come several to an entry: an issued event with a line break is one');
  t.equal(decodeEntry('s', '1-0', issued)[0]?.kind, 'bad', '(and bad)');
  t.same(decodeEntry('s', '1-0', null).map((e) => e.kind), ['gone'], 'a deleted entry is one event, gone');
});
