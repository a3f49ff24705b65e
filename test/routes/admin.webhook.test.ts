import fc from 'fast-check';
import t from 'tap';
import { createBody, expectInvalid, expectLicenseView } from '../helpers/admin.js';
import { FUZZ_SEED, fuzzValue, nastyString, runsFor } from '../helpers/fuzz.js';
import { startHarness } from '../helpers/harness.js';

// The webhook fields of the admin API (README "Webhooks"): webhookUrl and webhookSecret on
// create and PATCH, the License view showing the URL and whether a secret is set, never
// the secret; bad values are 400 INVALID_REQUEST naming the field, and change nothing.

const SECRET = 'a-webhook-secret-of-32-characters';
const BAD = 'Kötü Webhook A.Ş.';
const URL = 'https://hooks.example.com/license-events?source=license-service';

t.test('admin webhook fields', async (t) => {
  const h = await startHarness(t, 'adminwebhook');

  t.test('create with a webhook: the URL shown, the secret never', async (t) => {
    const res = await h.admin('POST', '/admin/v1/licenses', createBody({ webhookUrl: URL, webhookSecret: SECRET }));
    expectLicenseView(t, res, 201);
    t.equal(res.body.data.webhookUrl, URL);
    t.equal(res.body.data.webhookSecretSet, true);
    t.notMatch(res.text, SECRET, 'never the secret');
    const read = await h.admin('GET', `/admin/v1/licenses/${res.body.data.licenseKey}`);
    expectLicenseView(t, read, 200);
    t.match(read.body.data, { webhookUrl: URL, webhookSecretSet: true });
    t.notMatch(read.text, SECRET);
    const [row] = await h.sql`select webhook_url, webhook_secret from licenses where license_key = ${res.body.data.licenseKey}`;
    t.same(row, { webhook_url: URL, webhook_secret: SECRET }, 'both stored');

    const plain = await h.admin('POST', '/admin/v1/licenses', createBody());
    t.match(plain.body.data, { webhookUrl: null, webhookSecretSet: false }, 'no webhook by default');
  });

  t.test('PATCH: a URL needs a secret, a new URL keeps the secret, null clears both', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: URL }), 'webhookSecret');
    t.match((await h.admin('GET', path)).body.data, { webhookUrl: null, webhookSecretSet: false }, 'nothing changed');

    const set = await h.admin('PATCH', path, { webhookUrl: URL, webhookSecret: SECRET });
    expectLicenseView(t, set, 200);
    t.match(set.body.data, { webhookUrl: URL, webhookSecretSet: true });
    t.notMatch(set.text, SECRET);

    const moved = await h.admin('PATCH', path, { webhookUrl: 'http://127.0.0.1:9/other' });
    t.match(moved.body.data, { webhookUrl: 'http://127.0.0.1:9/other', webhookSecretSet: true }, 'a new URL alone keeps the secret');
    const rotated = await h.admin('PATCH', path, { webhookSecret: `${SECRET}-2` });
    t.equal(rotated.status, 200, 'a new secret alone');
    const [row] = await h.sql`select webhook_secret from licenses where license_key = ${lic.licenseKey}`;
    t.equal(row?.webhook_secret, `${SECRET}-2`);

    const cleared = await h.admin('PATCH', path, { webhookUrl: null });
    t.match(cleared.body.data, { webhookUrl: null, webhookSecretSet: false }, 'null clears the URL and the secret');
    const [gone] = await h.sql`select webhook_url, webhook_secret from licenses where license_key = ${lic.licenseKey}`;
    t.same(gone, { webhook_url: null, webhook_secret: null });
    expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: URL }), 'webhookSecret');

    // a webhook-only change leaves what the public API reads alone
    const before = await h.admin('GET', path);
    await h.admin('PATCH', path, { webhookUrl: URL, webhookSecret: SECRET });
    const after = await h.admin('GET', path);
    const withoutWebhook = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([k]) => !k.startsWith('webhook')));
    t.same(withoutWebhook(after.body.data), withoutWebhook(before.body.data), 'the rest of the license unchanged');
    t.equal((await h.checkQuota(lic.licenseKey)).status, 200);
  });

  t.test('PATCH of webhook and other fields together: all or nothing', async (t) => {
    const lic = await h.createLicense({ organizationName: 'Önce A.Ş.' });
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    expectInvalid(t, await h.admin('PATCH', path, { organizationName: 'Sonra A.Ş.', webhookUrl: URL }), 'webhookSecret');
    t.match((await h.admin('GET', path)).body.data, { organizationName: 'Önce A.Ş.', webhookUrl: null }, 'nothing changed');
    t.equal((await h.checkQuota(lic.licenseKey)).body.data.organizationName, 'Önce A.Ş.', 'the public view neither');
    const both = await h.admin('PATCH', path, { organizationName: 'Sonra A.Ş.', webhookUrl: URL, webhookSecret: SECRET });
    expectLicenseView(t, both, 200);
    t.match(both.body.data, { organizationName: 'Sonra A.Ş.', webhookUrl: URL, webhookSecretSet: true });
    t.equal((await h.checkQuota(lic.licenseKey)).body.data.organizationName, 'Sonra A.Ş.', 'in force on the next public request');
  });

  t.test('bad values: 400 naming the field, nothing changed', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const badUrls: unknown[] = [
      '', 'not a url', 'ftp://example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', '//example.com/x', 'https://',
      'https://user:pw@example.com/x', 'https://user@example.com/x', 'https://exa mple.com/', ' https://example.com/',
      'https://example.com/\u0000', 'https://example.com/a\nb', 'https://example.com/\ud800', `https://example.com/${'x'.repeat(2100)}`,
      42, true, ['https://example.com/'], { url: 'https://example.com/' },
    ];
    for (const webhookUrl of badUrls) {
      expectInvalid(t, await h.admin('PATCH', path, { webhookUrl, webhookSecret: SECRET }), 'webhookUrl');
      expectInvalid(t, await h.admin('POST', '/admin/v1/licenses', createBody({ webhookUrl, webhookSecret: SECRET, organizationName: BAD })), 'webhookUrl');
    }
    const badSecrets: unknown[] = ['', 'short', 'x'.repeat(257), `${SECRET}\u0000`, `${SECRET}\u001b`, 1234567890123456, null, [SECRET], {}];
    for (const webhookSecret of badSecrets) {
      expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: URL, webhookSecret }), 'webhookSecret');
    }
    expectInvalid(t, await h.admin('POST', '/admin/v1/licenses', createBody({ webhookUrl: URL, organizationName: BAD })), 'webhookSecret');
    const huge = await h.admin('PATCH', path, { webhookUrl: `https://example.com/${'x'.repeat(70_000)}`, webhookSecret: SECRET });
    t.ok(huge.status === 413 || huge.status === 400, `a body over the admin limit: ${huge.status}`);
    t.match((await h.admin('GET', path)).body.data, { webhookUrl: null, webhookSecretSet: false }, 'nothing changed');
    const [count] = await h.sql`select count(*)::int as n from licenses where organization_name = ${BAD}`;
    t.equal(count?.n, 0, 'no license was created with a bad webhook');
  });

  t.test('any value as webhookUrl: 200 with exactly that http(s) URL, or 400 naming the field; never a 5xx', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const urlish = fc.tuple(fc.constantFrom('http://', 'https://', 'HTTPS://', 'ftp://', ''), nastyString, fc.constantFrom('', '/p?q=1', '#f'))
      .map(([scheme, host, tail]) => `${scheme}${host}${tail}`);
    await fc.assert(fc.asyncProperty(fc.oneof(urlish, fc.webUrl(), fuzzValue), async (webhookUrl) => {
      const res = await h.admin('PATCH', path, { webhookUrl, webhookSecret: SECRET });
      if (res.status === 200) {
        if (webhookUrl === null) return res.body.data.webhookUrl === null;
        // eslint-disable-next-line no-control-regex -- what must never be stored
        return typeof webhookUrl === 'string' && /^https?:\/\/[^\s\u0000-\u001f\u007f]+$/i.test(webhookUrl) && res.body.data.webhookUrl === webhookUrl;
      }
      return res.status === 400 && res.body?.error?.code === 'INVALID_REQUEST' && String(res.body.error.message).startsWith('webhookUrl');
    }), { seed: FUZZ_SEED, numRuns: runsFor(1) });
    t.pass('every answer was 200 with the URL as sent, or 400 naming webhookUrl');
  });
});
