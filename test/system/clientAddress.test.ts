import fc from 'fast-check';
import t from 'tap';
import { clientAddress, forwardedFor } from '../../src/http/clientAddress.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';

// The client's address behind TRUST_PROXY (src/http/clientAddress.ts): X-Forwarded-For may come
// as several header lines (HAProxy adds its own after the client's), and how a list is cut
// into lines must not change whose address it is. The HTTP view of this is in
// test/routes/checkQuota.security.test.ts (two lines through the port).

/** A request's headers as uWebSockets.js walks them: names in lower case, in the order sent. */
const requestWith = (headers: [string, string][]) => ({
  forEach(cb: (name: string, value: string) => void) {
    for (const [name, value] of headers) cb(name, value);
  },
});

const entry = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('', 'unknown', ' 10.0.0.1 ', '_hidden', '10.0.0.1\u0000'));

t.test('a list cut into any number of lines gives the address the list in one line gives', async (t) => {
  fc.assert(fc.property(
    fc.array(entry, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 8 }), fc.integer({ min: 1, max: 16 }),
    fc.array(fc.constantFrom('host', 'x-forwarded-host', 'forwarded', 'content-type'), { maxLength: 3 }),
    (entries, cuts, hops, others) => {
      const lines: string[] = [];
      let from = 0;
      for (const cut of [...new Set(cuts.map((c) => 1 + (c % entries.length)))].sort((a, b) => a - b)) {
        if (cut >= entries.length) continue;
        lines.push(entries.slice(from, cut).join(','));
        from = cut;
      }
      lines.push(entries.slice(from).join(','));
      const headers: [string, string][] = [...others.map((n): [string, string] => [n, '203.0.113.99']), ...lines.map((l): [string, string] => ['x-forwarded-for', l])];
      return clientAddress('127.0.0.1', forwardedFor(requestWith(headers)), hops) === clientAddress('127.0.0.1', entries.join(','), hops);
    },
  ), { seed: FUZZ_SEED, numRuns: 2000 });
  t.pass(`2000 lists, seed ${FUZZ_SEED}`);
});

t.test('the proxy\'s line after the client\'s decides, and other headers are not read', async (t) => {
  const of = (headers: [string, string][], hops = 1) => clientAddress('127.0.0.1', forwardedFor(requestWith(headers)), hops);
  t.equal(of([['x-forwarded-for', '198.51.100.1'], ['x-forwarded-for', '192.0.2.7']]), '192.0.2.7', 'HAProxy\'s line wins over the client\'s claim');
  t.equal(of([['x-forwarded-for', '198.51.100.1'], ['x-forwarded-for', '192.0.2.7']], 2), '198.51.100.1', 'two trusted hops reach the first line');
  t.equal(of([['x-forwarded-for', '192.0.2.7'], ['x-forwarded-for', '']]), '127.0.0.1', 'an empty last line is no address: the peer\'s');
  t.equal(of([['forwarded', 'for=198.51.100.1'], ['x-real-ip', '198.51.100.2']]), '127.0.0.1', 'only X-Forwarded-For is read');
  t.equal(of([]), '127.0.0.1', 'no header: the peer');
});
