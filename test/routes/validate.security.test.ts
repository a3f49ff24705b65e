import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { adminOk, adminView, MSG, NO_RATE_LIMITS, TokenSource } from '../helpers/validate.js';

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
