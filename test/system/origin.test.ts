import fc from 'fast-check';
import t from 'tap';
import { MAX_HOST_LENGTH, normaliseDomain, originHost } from '../../src/licenses/origin.js';
import { FUZZ_SEED, runsFor } from '../helpers/fuzz.js';

// How an origin becomes the host matched against a license's domains (src/licenses/origin.ts
// originHost), property by property: whatever the string, the host is "" or a host name a
// domain entry could be; a well-formed origin gives its host in lower case; and the malformed
// kinds give "" whatever host they wrap. The label rule is written out again here, from
// RFC 1035, rather than imported, so the test does not check the code against itself. The
// same origins through the service: test/routes/redemption.origin.security.test.ts.

const settings = { seed: FUZZ_SEED, numRuns: runsFor(20), includeErrorInReport: true };

const labelPasses = (label: string): boolean =>
  label.length >= 1 && label.length <= 63 && /^[a-z0-9-]+$/.test(label) && !label.startsWith('-') && !label.endsWith('-');
const hostPasses = (host: string): boolean => host.length <= MAX_HOST_LENGTH && host.split('.').every(labelPasses);

/** Characters that build origins and break them: scheme, port and path marks, "@", "*", "%", brackets, IDN. */
const originChars = fc.constantFrom(
  'h', 't', 'p', 's', 'a', 'Z', '0', '9', '-', '.', ':', '/', '//', '@', '*', '%', '[', ']', '?', '#', '\\', ' ', 'ü', 'İ',
  '\u3002', '\uff0e', 'xn--', 'https://', 'HTTP://', 'file://', ':443', '\u0000',
);
const anyOrigin = fc.oneof(
  fc.string({ unit: originChars, maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.domain(),
);

/** A label as an entry may have it, not a punycode one (whose text must also decode). */
const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/).filter((l) => !l.startsWith('xn--'));
const host = fc.array(label, { minLength: 1, maxLength: 6 }).map((ls) => ls.join('.')).filter((h) => h.length <= MAX_HOST_LENGTH);

t.test('any string: "" or a host whose every label passes the label rule, within the length limits', async (t) => {
  fc.assert(fc.property(anyOrigin, (origin) => {
    const got = originHost(origin);
    return got === '' || (hostPasses(got) && originHost(got) === got);
  }), settings);
  t.pass(`${settings.numRuns} strings, seed ${FUZZ_SEED}`);
});

t.test('a well-formed origin: its host in lower case, whatever the scheme\'s case, the port and the path', async (t) => {
  const origin = fc.record({
    host,
    spelt: fc.array(fc.boolean(), { maxLength: MAX_HOST_LENGTH }),
    scheme: fc.option(fc.mixedCase(fc.constantFrom('http://', 'https://')), { nil: '' }),
    port: fc.option(fc.integer({ min: 1, max: 65535 }).map((p) => `:${p}`), { nil: '' }),
    rest: fc.option(fc.tuple(fc.constantFrom('/', '?', '#'), fc.string({ maxLength: 20 })).map(([a, b]) => a + b), { nil: '' }),
    rootDot: fc.boolean(),
  });
  fc.assert(fc.property(origin, (o) => {
    const mixed = [...o.host].map((c, i) => (o.spelt[i] ? c.toUpperCase() : c)).join('');
    return originHost(`${o.scheme}${mixed}${o.rootDot ? '.' : ''}${o.port}${o.rest}`) === o.host;
  }), settings);
  t.pass(`${settings.numRuns} origins, seed ${FUZZ_SEED}`);
});

t.test('the malformed kinds give "" whatever host they wrap', async (t) => {
  const wrappings: ((h: string) => string)[] = [
    // "*", empty labels, too long
    (h) => `https://*.${h}`, (h) => `https://.${h}`, (h) => `https://a..${h}`, (h) => `https://${h}..`, (h) => `*.${h}`,
    (h) => `https://${'a'.repeat(64)}.${h}`, (h) => `https://${`${'a'.repeat(63)}.`.repeat(4)}${h}`,
    // another scheme, or one without "//" (`https:x.` is no host:port: "https:443" would be)
    (h) => `file://${h}`, (h) => `javascript://${h}/x`, (h) => `ftp://${h}`, (h) => `ws://${h}`, (h) => `//${h}`, (h) => `https:x.${h}`,
    // user info
    (h) => `mailto:x@${h}`, (h) => `user@${h}`, (h) => `https://u:p@${h}`, (h) => `https://${h}@evil.example`,
    (h) => `https://${h}:443@evil.example`, (h) => `https://${h}\\@evil.example`,
    // no port of 1-5 digits (up to 65535)
    (h) => `https://${h}:`, (h) => `https://${h}:123456`, (h) => `https://${h}:65536`, (h) => `https://${h}:8a`,
    // characters no label has
    (h) => `https://a%2E${h}`, (h) => `https://${h}%00`, (h) => `https://[::1]/${h}`, (h) => `https://${h} x`, (h) => `${h}\u0000.evil.example`,
  ];
  fc.assert(fc.property(host, fc.nat({ max: wrappings.length - 1 }), (h, i) => originHost((wrappings[i] as (h: string) => string)(h)) === ''), settings);
  for (const wrap of wrappings) t.equal(originHost(wrap('ornek.com.tr')), '', JSON.stringify(wrap('ornek.com.tr')));
});

t.test('the spellings clients send, and what they name', async (t) => {
  const cases: [string, string][] = [
    ['https://eczane.ornek.com.tr', 'eczane.ornek.com.tr'], ['eczane.ornek.com.tr', 'eczane.ornek.com.tr'],
    ['https://EXAMPLE.com:8443/path', 'example.com'], ['HTTPS://A.Corp.Example.ORG:8080/p', 'a.corp.example.org'],
    ['https://example.com/a?b=c', 'example.com'], ['http://example.com#f', 'example.com'], ['localhost:3000', 'localhost'],
    ['imza.example.com.', 'imza.example.com'], [' https://example.com ', 'example.com'], ['https://example.com/x@y', 'example.com'],
    ['https://bücher.ornek.com.tr', 'xn--bcher-kva.ornek.com.tr'], ['https://BÜCHER.example', 'xn--bcher-kva.example'],
    ['https://xn--BCHER-kva.example:8443/x', 'xn--bcher-kva.example'], ['bücher.example.', 'xn--bcher-kva.example'],
    ['', ''], ['   ', ''], ['.', ''], ['xn--zz.example', ''], ['ü%41.example', ''], ['ü\\x.example', ''], ['https://örnek\u3002*.tr', ''],
  ];
  for (const [origin, want] of cases) t.equal(originHost(origin), want, JSON.stringify(origin));
});

t.test('domain entries obey the same rule: valid hosts and their wildcards kept, nothing else', async (t) => {
  fc.assert(fc.property(anyOrigin, fc.boolean(), (text, star) => {
    const got = normaliseDomain(star ? `*.${text}` : text);
    return got === null || hostPasses(got.startsWith('*.') ? got.slice(2) : got);
  }), settings);
  fc.assert(fc.property(host, (h) => normaliseDomain(h) === h && normaliseDomain(`*.${h.toUpperCase()}`) === `*.${h}`), settings);
  for (const entry of ['*', '*.*.com', 'a..b', '.a.com', 'user@a.com', 'a%41.com', 'file://a.com', 'a.com:99999']) {
    t.equal(normaliseDomain(entry), null, `${entry}: refused`);
  }
});
