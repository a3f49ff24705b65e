import fc from 'fast-check';
import t from 'tap';
import { csvLine, CsvParser, type CsvRecord } from '../../src/cli/licensectl/csv.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';

// The CSV reader of licensectl import (src/cli/licensectl/csv.ts): what csvLine writes reads
// back the same, however the text is cut into chunks, with CRLF, LF or CR line ends, a byte
// order mark and empty lines between records; and the files spreadsheets write.

function parseChunks(chunks: readonly string[]): CsvRecord[] {
  const parser = new CsvParser();
  return [...chunks.flatMap((c) => parser.push(c)), ...parser.end()];
}

const fieldsOf = (records: CsvRecord[]): string[][] => records.map((r) => r.fields);

/** Text cut at the given code-point positions (a stream decoder never splits a code point). */
function cut(text: string, at: number[]): string[] {
  const points = Array.from(text);
  const cuts = [...new Set(at.map((p) => p % (points.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of [...cuts, points.length]) {
    out.push(points.slice(from, c).join(''));
    from = c;
  }
  return out;
}

const field = fc.oneof(
  fc.string({ unit: fc.constantFrom(',', '"', '\r', '\n', 'a', 'ü', '\uFEFF', ' ', '\t', '😀'), maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
);
const records = fc.array(fc.array(field, { minLength: 1, maxLength: 6 }), { maxLength: 12 });

t.test('round trip: csvLine then CsvParser gives the records back', async (t) => {
  fc.assert(fc.property(
    records, fc.constantFrom('\r\n', '\n', '\r'), fc.boolean(), fc.array(fc.nat(), { maxLength: 10 }), fc.array(fc.boolean(), { maxLength: 12 }),
    (recs, eol, bom, cuts, blanks) => {
      let text = bom ? '\uFEFF' : '';
      recs.forEach((r, i) => {
        text += csvLine(r).replace(/\r\n$/, eol);
        if (blanks[i]) text += eol; // an empty line between records
      });
      const parsed = parseChunks(cut(text, cuts));
      if (JSON.stringify(fieldsOf(parsed)) !== JSON.stringify(recs)) {
        throw new Error(`read ${JSON.stringify(fieldsOf(parsed))} from ${JSON.stringify(text)}`);
      }
      return parsed.every((r) => r.error === undefined);
    },
  ), { seed: FUZZ_SEED, numRuns: 500 });
  t.pass(`500 files, seed ${FUZZ_SEED}`);
});

t.test('what spreadsheets write', async (t) => {
  const text = '\uFEFForganizationName,password,totalQuota\r\n"Acme, ""Ltd""",p1,5\r\n\r\n"Two\r\nLines",p2,7\r\nlast,p3,9';
  const parsed = parseChunks([text]);
  t.same(fieldsOf(parsed), [
    ['organizationName', 'password', 'totalQuota'], ['Acme, "Ltd"', 'p1', '5'], ['Two\r\nLines', 'p2', '7'], ['last', 'p3', '9'],
  ]);
  t.same(parsed.map((r) => r.line), [1, 2, 4, 6], 'the line each record starts on');
  t.same(fieldsOf(parseChunks(['a,b\n', '\n', '\n', 'c,d\n\n'])), [['a', 'b'], ['c', 'd']], 'empty lines dropped');
  t.same(fieldsOf(parseChunks(['a,,\n""\n'])), [['a', '', ''], ['']], 'empty fields kept; a quoted empty line is a record');
  t.same(fieldsOf(parseChunks(['x"y,"a"b\n'])), [['x"y', 'ab']], 'stray quotes kept as they are');
  t.same(fieldsOf(parseChunks(['a,b', ''])), [['a', 'b']], 'the last line needs no line break');
  t.same(parseChunks([]), [], 'an empty file has no records');
  t.same(parseChunks(['\uFEFF']), [], 'a byte order mark alone is an empty file');
});

t.test('a quoted field the text never closes is an error record', async (t) => {
  const parsed = parseChunks(['a,b\n"open,', 'still open\n']);
  t.same(parsed[0]?.fields, ['a', 'b']);
  t.same(parsed[1], { fields: ['open,still open\n'], line: 2, error: 'unterminated quoted field' });
});
