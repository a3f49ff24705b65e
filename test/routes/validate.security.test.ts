import t from 'tap';
import { adminOk, adminView } from '../helpers/admin.js';
import { NO_RATE_LIMITS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { expectRateLimited, MSG } from '../helpers/shapes.js';
import { TokenSource } from '../helpers/tokens.js';

// POST /api/license/validate against abuse: a license with domains redeems only for an
// origin that matches one (exact host or wildcard subdomain, IDN in ASCII form), an admin
// change of the domains is in force at once, and RATE_VALIDATE_PER_MIN per company (a
// refused request spends nothing and burns no token). Forged and tampered tokens:
// validate.error.test.ts (401 Geçersiz token); malformed origins, at validate and at sign:
// redemption.origin.security.test.ts.

const h = await startHarness(t, 'validate-origin', NO_RATE_LIMITS);

const DENIED = { success: false, message: MSG.ORIGIN };

t.test('a license without domains accepts any origin or none', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10 });
  const source = new TokenSource(h, lic);
  const origins: unknown[] = [undefined, null, '', 'http://evil.com', 'https://anything.example:9000/x', 'localhost'];
  for (let i = 0; i < origins.length; i++) {
    const res = await h.validate(await source.next(), origins[i]);
    t.equal(res.status, 200, `origin ${JSON.stringify(origins[i]) ?? 'absent'}: accepted`);
    t.equal(res.body?.usedQuota, i + 1, `origin ${JSON.stringify(origins[i]) ?? 'absent'}: quota taken`);
  }
});

t.test('with domains, origin is required and must match a host name (exact or wildcard subdomain)', async (t) => {
  const lic = await h.createLicense({ totalQuota: 20, domains: ['example.com', '*.corp.example.org'] });
  t.strictSame((await adminView(h, lic.licenseKey)).domains, ['example.com', '*.corp.example.org'], 'domains stored');
  const source = new TokenSource(h, lic);

  // refusals do not burn the token, so one token serves them all
  const probe = await source.next();
  const refusedOrigins: unknown[] = [
    undefined, null, '', 'http://evil.com', 'evil.com', 'sub.example.com', 'https://sub.example.com',
    'corp.example.org', 'https://corp.example.org:443/', 'example.com.evil.com', 'notexample.com',
    'notcorp.example.org', 'a.corp.example.org.evil.com', 'https://evil.com/example.com', 'example.org',
    // malformed: no host name, or another scheme (more in redemption.origin.security.test.ts)
    'https://*.corp.example.org', 'https://.corp.example.org', 'https://a..corp.example.org', 'file://example.com', 'javascript://example.com/x',
  ];
  for (const origin of refusedOrigins) {
    const res = await h.validate(probe, origin);
    t.equal(res.status, 401, `${JSON.stringify(origin) ?? 'absent'}: 401`);
    t.strictSame(res.body, DENIED, `${JSON.stringify(origin) ?? 'absent'}: domain message`);
  }
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 0, 'refusals took no quota');

  const accepted = [
    'https://EXAMPLE.com:8443/path', 'example.com', 'http://example.com', 'EXAMPLE.COM', 'https://example.com/a?b=c',
    'a.corp.example.org', 'x.y.corp.example.org', 'https://A.Corp.Example.ORG:8080/p',
  ];
  let used = 0;
  for (const origin of accepted) {
    const res = await h.validate(await source.next(), origin);
    used++;
    t.equal(res.status, 200, `${origin}: accepted`);
    t.equal(res.body?.usedQuota, used, `${origin}: quota taken`);
  }
  const late = await h.validate(probe, 'example.com');
  t.equal(late.status, 200, 'the token refused for its origins redeems with a good one');
  t.equal(late.body?.usedQuota, used + 1);
});

t.test('internationalised domains are compared in their ASCII form', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, domains: ['bücher.example'] });
  t.strictSame((await adminView(h, lic.licenseKey)).domains, ['xn--bcher-kva.example'], 'stored in ASCII form (admin view)');
  const rows = await h.sql`select domains from licenses where firma_id = ${lic.firmaId}`;
  t.strictSame(rows[0]?.domains, ['xn--bcher-kva.example'], 'stored in ASCII form (Postgres)');
  const source = new TokenSource(h, lic);

  const probe = await source.next();
  for (const origin of ['bucher.example', 'https://bucher.example', 'xn--bcher.example']) {
    const res = await h.validate(probe, origin);
    t.equal(res.status, 401, `${origin}: refused`);
    t.strictSame(res.body, DENIED);
  }
  let used = 0;
  for (const origin of ['https://BÜCHER.example', 'xn--bcher-kva.example', 'bücher.example', 'https://xn--BCHER-kva.example:8443/x']) {
    const res = await h.validate(await source.next(), origin);
    used++;
    t.equal(res.status, 200, `${origin}: accepted`);
    t.equal(res.body?.usedQuota, used);
  }
});

t.test('an admin PATCH of domains is in force on the next validate', async (t) => {
  const lic = await h.createLicense({ totalQuota: 10, domains: ['example.com'] });
  const source = new TokenSource(h, lic);
  const a = await source.next();
  const res1 = await h.validate(a, 'other.example');
  t.equal(res1.status, 401, 'other.example refused before the change');
  t.strictSame(res1.body, DENIED);

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { domains: ['other.example'] });
  t.equal((await h.validate(a, 'other.example')).status, 200, 'other.example accepted right after the change');
  const b = await source.next();
  const res2 = await h.validate(b, 'example.com');
  t.equal(res2.status, 401, 'example.com refused after it was removed');
  t.strictSame(res2.body, DENIED);
  t.equal((await h.validate(b)).status, 401, 'no origin refused while domains are set');

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { domains: [] });
  t.equal((await h.validate(b, 'example.com')).status, 200, 'any origin accepted once domains are cleared');
  t.equal((await h.validate(await source.next())).status, 200, 'and no origin too');

  await adminOk(h, 'PATCH', `/admin/v1/licenses/${lic.licenseKey}`, { domains: ['*.example.com'] });
  const c = await source.next();
  t.equal((await h.validate(c, 'example.com')).status, 401, 'apex refused under a wildcard entry');
  t.equal((await h.validate(c, 'www.example.com')).status, 200, 'subdomain accepted under a wildcard entry');
  t.equal((await adminView(h, lic.licenseKey)).usedQuota, 4, 'four redemptions in all');
});

t.test('rate limit: the 4th request is refused per company, and the refusal spends nothing', async (t) => {
  const h = await startHarness(t, 'validate-ratelimit', { RATE_VALIDATE_PER_MIN: '3' });
  const lic = await h.createLicense({ totalQuota: 10 });
  const other = await h.createLicense({ totalQuota: 10 });
  const tokens = await new TokenSource(h, lic).many(4, (i) => (i === 0 ? 0 : 1));
  t.equal(new Set(tokens).size, 4);
  const [t1, t2, t3, t4] = tokens as [string, string, string, string];

  t.equal((await h.validate(t1)).status, 200);
  t.equal((await h.validate(t1)).status, 400, 'a refused validate (already used) counts too');
  t.equal((await h.validate(t2)).status, 200);
  expectRateLimited(t, await h.validate(t3));
  expectRateLimited(t, await h.validate(t4, 'https://eczane.example'));

  const otherToken = (await h.getToken(other.licenseKey, other.password, 0)).body.signToken as string;
  t.equal((await h.validate(otherToken)).status, 200, 'another company is not limited');

  const view = await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}`);
  t.equal(view.body.data.usedQuota, 2, 'no quota taken by the refused requests');

  // open the window again: the refused tokens were not burned
  t.equal(await h.redis.del(h.keys.forLicense(lic.firmaId).rateValidate), 1, 'the validate counter of the company exists');
  const r3 = await h.validate(t3);
  t.equal(r3.status, 200, `token refused by the rate limit still redeems (${r3.text})`);
  t.equal(r3.body.usedQuota, 3);
  t.equal(r3.body.remainingQuota, 7);
  const r4 = await h.validate(t4, 'https://eczane.example');
  t.equal(r4.status, 200);
  t.equal(r4.body.remainingQuota, 6);

  await h.drainWorker();
  const rows = await h.sql`select token_id, status from sign_tokens where firma_id = ${lic.firmaId} order by token_id`;
  t.equal(rows.length, 4);
  t.ok(rows.every((r) => r.status === 'used'));
  const ids = tokens.map((tok) => claimsOf(tok).token_id).sort();
  t.same(rows.map((r) => r.token_id), ids);
});
