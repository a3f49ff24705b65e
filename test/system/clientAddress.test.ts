import fc from 'fast-check';
import t from 'tap';
import { addressBucket, clientAddress, forwardedFor, peerAddressText } from '../../src/http/clientAddress.js';
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

/** 16 bytes of eight 16-bit groups, zero groups frequent (so every length of a zero run occurs). */
const ipv6Bytes = fc.array(fc.oneof(fc.constant(0), fc.constant(0), fc.constant(1), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff })), { minLength: 8, maxLength: 8 })
  .map((groups) => {
    const b = new Uint8Array(16);
    groups.forEach((g, i) => { b[2 * i] = g >> 8; b[2 * i + 1] = g & 0xff; });
    return b;
  });

t.test('the peer\'s address from uWebSockets.js\'s binary form: IPv4 dotted (also mapped into IPv6), IPv6 short', async (t) => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (b) =>
    peerAddressText(b.slice().buffer) === [...b].join('.')), { seed: FUZZ_SEED, numRuns: 500 });
  fc.assert(fc.property(ipv6Bytes, (b) => {
    const mapped = b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
    const hex = Array.from({ length: 8 }, (_, i) => ((b[2 * i] as number) * 256 + (b[2 * i + 1] as number)).toString(16)).join(':');
    // the WHATWG URL parser writes IPv6 hosts in RFC 5952's short form
    const expected = mapped ? [...b.subarray(12)].join('.') : new URL(`http://[${hex}]/`).hostname.slice(1, -1);
    return peerAddressText(b.slice().buffer) === expected;
  }), { seed: FUZZ_SEED, numRuns: 3000 });
  t.pass(`500 IPv4 and 3000 IPv6 addresses, seed ${FUZZ_SEED}`);

  const mapped = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
  t.equal(peerAddressText(mapped.buffer), '127.0.0.1', 'an IPv4 client of a dual-stack socket is its IPv4 address');
  t.equal(addressBucket(peerAddressText(mapped.buffer)), '127.0.0.1', 'and counts as that address, not as an IPv6 /64');
  t.equal(peerAddressText(new Uint8Array(16).buffer), '::');
  t.equal(peerAddressText(new Uint8Array([...new Uint8Array(15), 1]).buffer), '::1');
  t.equal(peerAddressText(new Uint8Array([0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]).buffer), '2001:db8:0:1::1', 'the longest run of zeros is cut');
  t.equal(peerAddressText(new Uint8Array([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]).buffer), '2001:db8::1:0:0:1', 'of two equal runs, the first');
  t.equal(peerAddressText(new Uint8Array([0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1]).buffer), '2001:db8:1:0:1:1:1:1', 'a lone zero group stays');
  t.equal(peerAddressText(new Uint8Array(0).buffer), '', 'no address (uWebSockets.js gives none for a socket gone): none');
});

t.test('a proxy\'s IPv4-mapped address counts as the IPv4 address in every spelling, not as the /64 all IPv4 clients share', async (t) => {
  const spellings: [string, string][] = [
    ['::ffff:192.0.2.1', '192.0.2.1'], ['0:0:0:0:0:FFFF:192.0.2.1', '192.0.2.1'], ['::ffff:c000:201', '192.0.2.1'],
    ['::FFFF:C000:0201', '192.0.2.1'], ['0:0:0:0:0:ffff:c000:201', '192.0.2.1'], ['0000:0000:0000:0000:0000:ffff:0a00:0001', '10.0.0.1'],
    ['::ffff:0:0', '0.0.0.0'], ['::ffff:ffff:ffff', '255.255.255.255'],
  ];
  for (const [written, ipv4] of spellings) t.equal(addressBucket(written), ipv4, written);
  t.equal(addressBucket('::fffe:c000:201'), '0:0:0:0::/64', 'not mapped: its /64');
  t.equal(addressBucket('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64', 'IPv6: its /64');
  t.not(addressBucket('::ffff:c000:201'), addressBucket('::ffff:c000:202'), 'two IPv4 clients: two buckets');
});
