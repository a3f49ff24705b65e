import t from 'tap';
import { adminView } from '../helpers/admin.js';
import { LIVE_COUNTS, startHarness, type TestLicense } from '../helpers/harness.js';
import type { Answer } from '../helpers/http.js';
import { documentNamed, sign } from '../helpers/receipts.js';
import { MSG, type Asserts } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// Malformed origins never match a license's domains, at validate and at sign alike: an
// origin's host must pass the label rule of a domain entry and its scheme, when given, be
// http or https (docs/api.md#origin-rules). Each origin below named an authorised host to
// the URL parsing that read origins before, and redeemed; now each is 401 "Bu domain için
// yetki yok", spends nothing and burns no token. The well-formed spellings still redeem,
// and a license without domains still takes any origin. originHost itself, property by
// property: test/system/origin.test.ts; the plain matching rules: validate.security.test.ts.

const h = await startHarness(t, 'origin-malformed', LIVE_COUNTS);
const DENIED = { success: false, message: MSG.ORIGIN };
const DOMAINS = ['ornek.com.tr', '*.corp.ornek.com.tr'];
const DOCUMENTS = [documentNamed('sözleşme.pdf')];

const MALFORMED = [
  'https://*.corp.ornek.com.tr', // a literal asterisk: the wildcard entry itself
  'https://.corp.ornek.com.tr', // an empty first label
  'https://a..corp.ornek.com.tr', // an empty label inside
  'file://ornek.com.tr', // a scheme other than http and https
  'javascript://ornek.com.tr/x',
  'ftp://ornek.com.tr',
  'mailto:x@ornek.com.tr', // user info, and a scheme without "//"
  'user@ornek.com.tr',
  'https://ornek.com.tr:443@evil.example',
  'https://a%2Ecorp.ornek.com.tr', // a percent escape, which URL parsing decoded into a dot
  '//ornek.com.tr', // no scheme but "//"
  'https:ornek.com.tr',
  'https://ornek.com.tr:123456', // a port of six digits
  `https://${'a'.repeat(64)}.corp.ornek.com.tr`, // a label over 63 characters
];

/** The two ways to redeem a token, as a client calls them. */
const endpoints: [string, (token: string, origin: string) => Promise<Answer>][] = [
  ['validate', (token, origin) => h.validate(token, origin)],
  ['sign', (token, origin) => sign(h, { token, origin, documents: DOCUMENTS })],
];

/** usedQuota as check-quota and the admin API report it, which must agree. */
async function usedOf(t: Asserts, lic: TestLicense): Promise<number> {
  const quota = await h.checkQuota(lic.licenseKey);
  const view = await adminView(h, lic.licenseKey);
  t.equal(quota.body?.data?.usedQuota, view.usedQuota, 'check-quota and the admin API agree');
  return view.usedQuota as number;
}

for (const [name, redeem] of endpoints) {
  t.test(`${name}: each malformed origin is 401 on a license with domains, spends nothing, burns no token`, async (t) => {
    const lic = await h.createLicense({ totalQuota: MALFORMED.length, domains: DOMAINS });
    const source = new TokenSource(h, lic);
    // a token each, so that every origin is judged on its own
    const probes: string[] = [];
    for (const origin of MALFORMED) {
      const probe = await source.next();
      probes.push(probe);
      const res = await redeem(probe, origin);
      t.equal(res.status, 401, `${origin}: 401 (${res.text.slice(0, 120)})`);
      t.strictSame(res.body, DENIED, `${origin}: the domain message`);
    }
    t.equal(await usedOf(t, lic), 0, 'no refusal took quota');
    for (const [i, probe] of probes.entries()) {
      const good = i % 2 === 0 ? 'https://a.corp.ornek.com.tr' : 'https://ornek.com.tr';
      const late = await redeem(probe, good);
      t.equal(late.status, 200, `the token refused for ${MALFORMED[i]} redeems with ${good} (${late.text.slice(0, 120)})`);
      t.equal(late.body?.usedQuota, i + 1, 'spending one unit');
    }
    t.equal(await usedOf(t, lic), MALFORMED.length, 'one unit a token in all');
  });
}

t.test('the well-formed spellings of an authorised host still redeem', async (t) => {
  const lic = await h.createLicense({ totalQuota: 20, domains: DOMAINS });
  const source = new TokenSource(h, lic);
  const good = [
    'https://ornek.com.tr', 'ornek.com.tr', 'ornek.com.tr.', 'ornek.com.tr:8080', 'HTTPS://ORNEK.COM.TR:8443/x?y#z',
    'http://ornek.com.tr/imza@belge', 'https://ornek.com.tr?x', 'https://eczane.corp.ornek.com.tr', 'eczane.corp.ornek.com.tr/path',
    'Http://X.Y.Corp.Ornek.Com.Tr', 'https://bücher.corp.ornek.com.tr', 'https://xn--bcher-kva.corp.ornek.com.tr:443/',
  ];
  let used = 0;
  for (const [i, origin] of good.entries()) {
    // every other one through sign: both read the origin in one place
    const [name, redeem] = endpoints[i % 2] as (typeof endpoints)[number];
    const res = await redeem(await source.next(), origin);
    used++;
    t.equal(res.status, 200, `${name} ${origin}: redeemed (${res.text.slice(0, 120)})`);
    t.equal(res.body?.usedQuota, used, `${name} ${origin}: one unit spent`);
  }
});

t.test('a license without domains accepts any origin, malformed ones included, or none', async (t) => {
  const lic = await h.createLicense({ totalQuota: MALFORMED.length + 2 });
  const source = new TokenSource(h, lic);
  let used = 0;
  for (const origin of [...MALFORMED, undefined]) {
    const res = origin === undefined ? await h.validate(await source.next()) : await h.validate(await source.next(), origin);
    used++;
    t.equal(res.status, 200, `${origin ?? 'no origin'}: redeemed`);
    t.equal(res.body?.usedQuota, used);
  }
  const signed = await sign(h, { token: await source.next(), origin: 'javascript://ornek.com.tr/x', documents: DOCUMENTS });
  t.equal(signed.status, 200, 'sign too');
});
