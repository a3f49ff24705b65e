import fc from 'fast-check';
import t from 'tap';
import { createBody, expectInvalid, expectLicenseView } from '../helpers/admin.js';
import { FUZZ_SEED, fuzzValue, nastyString, runsFor } from '../helpers/fuzz.js';
import { startHarness } from '../helpers/harness.js';
import { LOCAL_RECEIVERS } from '../helpers/webhooks.js';

// The webhook fields of the admin API (docs/api.md#webhooks): webhookUrl and webhookSecret on
// create and PATCH, the License view showing the URL and whether a secret is set, never
// the secret; bad values are 400 INVALID_REQUEST naming the field, and change nothing.
// By default a webhook goes only to https:// on a public address: http:// and internal
// targets are refused the same way, unless WEBHOOK_ALLOW_HTTP / WEBHOOK_ALLOW_PRIVATE_NETWORKS.

const SECRET = 'a-webhook-secret-of-32-characters';
const BAD = 'Kötü Webhook A.Ş.';
const URL = 'https://hooks.example.com/license-events?source=license-service';

const INSECURE = 'webhookUrl: yalnızca https:// adresleri kabul edilir; beklenen: bir https:// adresi';
const INTERNAL = 'webhookUrl: iç ağ adreslerine izin verilmez; beklenen: internetteki bir sunucunun adresi';
/** http:// URLs: the request would carry the license key unencrypted. */
const HTTP_URLS = ['http://hooks.example.com/license', 'HTTP://hooks.example.com/', 'http://93.184.216.34/hook'];
/**
 * Targets inside this machine or its networks, by address in every spelling WHATWG URL
 * reads as one (2130706433, 0x7f.1, 127.1 and 0177.0.0.1 are all 127.0.0.1), and by name.
 */
const INTERNAL_URLS = [
  'https://127.0.0.1/', 'https://127.0.0.1:6379/', 'https://127.255.255.254:5432/', 'https://2130706433/', 'https://0x7f.1/',
  'https://127.1/', 'https://0177.0.0.1/', 'https://%31%32%37.0.0.1/', 'https://[::1]/', 'https://[0:0:0:0:0:0:0:1]:8080/',
  'https://10.0.0.1/', 'https://10.255.255.255/', 'https://172.16.0.1/', 'https://172.31.255.254/', 'https://192.168.1.1/',
  'https://100.64.0.1/', 'https://100.100.100.200/latest/meta-data/', 'https://169.254.169.254/latest/meta-data/iam/',
  'https://169.254.0.1/', 'https://[fd00:ec2::254]/latest/meta-data/', 'https://[fc00::1]/', 'https://[fe80::1]/',
  'https://[febf:ffff::1]/', 'https://0.0.0.0/', 'https://0/', 'https://[::]/', 'https://224.0.0.1/', 'https://239.255.255.250:1900/',
  'https://255.255.255.255/', 'https://240.0.0.1/', 'https://[ff02::1]/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/',
  'https://[::ffff:169.254.169.254]/', 'https://[::ffff:10.0.0.1]/', 'https://[64:ff9b::127.0.0.1]/', 'https://[::127.0.0.1]/',
  'https://192.0.0.192/', 'https://168.63.129.16/', 'https://localhost/', 'https://LOCALHOST./x', 'https://api.localhost/',
  'https://metadata.google.internal/computeMetadata/v1/', 'https://metadata.google.internal./', 'https://printer.local/',
  'https://router.home.arpa/',
];
/** Public https targets: addresses on the internet, and a name that does not resolve here (accepted: every delivery checks it again). */
const PUBLIC_URLS = [
  'https://93.184.216.34/hook', 'https://8.8.8.8:8443/x', 'https://100.63.255.255/', 'https://172.32.0.1/', 'https://[2606:4700:4700::1111]/x',
  'https://[::ffff:8.8.8.8]/', 'https://hooks.example.com/license', 'https://internal.example.com/', 'https://localhost.example.com/',
];

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

    const moved = await h.admin('PATCH', path, { webhookUrl: 'https://hooks.example.com/other' });
    t.match(moved.body.data, { webhookUrl: 'https://hooks.example.com/other', webhookSecretSet: true }, 'a new URL alone keeps the secret');
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
      'https://example.com:0/x', 'https://example.com:000/x',
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

  t.test('http:// and internal targets: 400 naming webhookUrl, in words that say nothing of the target; nothing stored', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const before = await h.admin('PATCH', path, { webhookUrl: URL, webhookSecret: SECRET });
    t.equal(before.status, 200);
    const refused: [string[], string][] = [[HTTP_URLS, INSECURE], [INTERNAL_URLS, INTERNAL]];
    for (const [urls, message] of refused) {
      for (const webhookUrl of urls) {
        for (const res of [
          await h.admin('PATCH', path, { webhookUrl, webhookSecret: `${SECRET}-new` }),
          await h.admin('PATCH', path, { webhookUrl }),
          await h.admin('POST', '/admin/v1/licenses', createBody({ webhookUrl, webhookSecret: SECRET, organizationName: BAD })),
        ]) {
          expectInvalid(t, res, 'webhookUrl');
          t.equal(res.body?.error?.message, message, webhookUrl);
        }
      }
    }
    const [row] = await h.sql`select webhook_url, webhook_secret from licenses where license_key = ${lic.licenseKey}`;
    t.same(row, { webhook_url: URL, webhook_secret: SECRET }, 'the webhook set before is unchanged, its secret too');
    const [count] = await h.sql`select count(*)::int as n from licenses where organization_name = ${BAD}`;
    t.equal(count?.n, 0, 'no license was created with a refused webhook');
  });

  t.test('public https targets are accepted, a name that does not resolve now too', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    for (const webhookUrl of PUBLIC_URLS) {
      const res = await h.admin('PATCH', path, { webhookUrl, webhookSecret: SECRET });
      t.equal(res.status, 200, `${webhookUrl}: ${res.text}`);
      t.equal(res.body?.data?.webhookUrl, webhookUrl, 'stored as sent');
    }
  });

  t.test('any value as webhookUrl: 200 with exactly that https URL, or 400 naming the field; never a 5xx', async (t) => {
    const lic = await h.createLicense();
    const path = `/admin/v1/licenses/${lic.licenseKey}`;
    const urlish = fc.tuple(fc.constantFrom('http://', 'https://', 'HTTPS://', 'ftp://', ''), nastyString, fc.constantFrom('', '/p?q=1', '#f'))
      .map(([scheme, host, tail]) => `${scheme}${host}${tail}`);
    await fc.assert(fc.asyncProperty(fc.oneof(urlish, fc.webUrl(), fuzzValue), async (webhookUrl) => {
      const res = await h.admin('PATCH', path, { webhookUrl, webhookSecret: SECRET });
      if (res.status === 200) {
        if (webhookUrl === null) return res.body.data.webhookUrl === null;
        // eslint-disable-next-line no-control-regex -- what must never be stored
        return typeof webhookUrl === 'string' && /^https:\/\/[^\s\u0000-\u001f\u007f]+$/i.test(webhookUrl) && res.body.data.webhookUrl === webhookUrl;
      }
      return res.status === 400 && res.body?.error?.code === 'INVALID_REQUEST' && String(res.body.error.message).startsWith('webhookUrl');
    }), { seed: FUZZ_SEED, numRuns: runsFor(1) });
    t.pass('every answer was 200 with the URL as sent, or 400 naming webhookUrl');
  });
});

t.test('WEBHOOK_ALLOW_HTTP=1 and WEBHOOK_ALLOW_PRIVATE_NETWORKS=1: http:// and internal targets accepted (tests, on-premises receivers)', async (t) => {
  const h = await startHarness(t, 'adminwebhooklocal', LOCAL_RECEIVERS);
  const created = await h.admin('POST', '/admin/v1/licenses', createBody({ webhookUrl: 'http://127.0.0.1:9/hook', webhookSecret: SECRET }));
  expectLicenseView(t, created, 201);
  t.equal(created.body.data.webhookUrl, 'http://127.0.0.1:9/hook');
  const path = `/admin/v1/licenses/${created.body.data.licenseKey}`;
  for (const webhookUrl of [...HTTP_URLS, ...INTERNAL_URLS, 'http://localhost:8080/hook', 'http://[::1]:9/x']) {
    const res = await h.admin('PATCH', path, { webhookUrl });
    t.equal(res.status, 200, `${webhookUrl}: ${res.text}`);
    t.equal(res.body?.data?.webhookUrl, webhookUrl, 'stored as sent');
  }
  expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: 'ftp://127.0.0.1/x' }), 'webhookUrl');
  expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: 'https://user:pw@127.0.0.1/x' }), 'webhookUrl');
});
