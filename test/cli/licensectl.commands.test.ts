import { randomUUID } from 'node:crypto';
import t from 'tap';
import { LICENSE_FIELDS } from '../helpers/admin.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { jsonOf, runCli, type CliResult } from '../helpers/licensectl.js';
import type { Asserts } from '../helpers/shapes.js';

// licensectl against a running service, as a user runs it: each command's human and --json
// output, what reached the admin API, and its exit codes and messages when something is
// wrong (1: the API refused, its code and message on stderr; 2: usage).

const NO_STACK = /\n\s+at |Error:|node:internal/;

function expectOk(t: Asserts, r: CliResult): void {
  t.equal(r.code, 0, `exit 0: ${r.stderr}`);
  t.equal(r.stderr, '', 'nothing on stderr');
}

function expectFailure(t: Asserts, r: CliResult, code: number, stderr: RegExp): void {
  t.equal(r.code, code, `exit ${code}: ${r.stdout}${r.stderr}`);
  t.match(r.stderr, stderr);
  t.notMatch(r.stderr, NO_STACK, 'no stack trace');
  t.equal(r.stdout, '', 'nothing on stdout');
}

t.test('licensectl commands', async (t) => {
  const h = await startHarness(t, 'licensectl', { RATE_GET_TOKEN_PER_MIN: '0' });
  const key = randomUUID();
  const read = async (): Promise<Record<string, unknown>> => (await h.admin('GET', `/admin/v1/licenses/${key}`)).body.data;

  t.test('create: the License as the API answers it; the password from stdin', async (t) => {
    const r = await runCli(h, ['create', '--json', '--organization', 'Örnek, "Eczane" A.Ş.', '--quota', '25', '--expiry', '2031-06-30',
      '--domains', 'ornek.com.tr, *.ornek.com.tr', '--key', key, '--password-stdin'], { input: 's3cret pass\n' });
    expectOk(t, r);
    const data = jsonOf(r);
    t.same(Object.keys(data).sort(), LICENSE_FIELDS);
    t.same(data, await read(), 'exactly the data of the API');
    t.match(data, { licenseKey: key, organizationName: 'Örnek, "Eczane" A.Ş.', totalQuota: 25, usedQuota: 0, isActive: true,
      expiryDate: '2031-06-30T23:59:59.999Z', domains: ['ornek.com.tr', '*.ornek.com.tr'] });
    const got = await h.getToken(key, 's3cret pass');
    t.equal(got.status, 200, 'the password as typed, without the line break');

    const human = await runCli(h, ['create', '--organization', 'Human Ltd', '--quota', '3', '--expiry', '2030-01-01T00:00:00Z',
      '--inactive', '--password', 'visible-password']);
    expectOk(t, human);
    t.match(human.stdout, /^Created:\nLicense key\s+[0-9a-f-]{36}\n/);
    t.match(human.stdout, /Organization\s+Human Ltd\n/);
    t.match(human.stdout, /Active\s+no\n/);
    t.match(human.stdout, /Domains\s+\(any origin\)\n/);
  });

  t.test('create with an expiry already past: created, the API\'s warning on stderr', async (t) => {
    const r = await runCli(h, ['create', '--organization', 'Eski Lisans', '--quota', '1', '--expiry', '2020-01-31', '--password', 'p', '--json']);
    t.equal(r.code, 0);
    t.equal(jsonOf(r).expiryDate, '2020-01-31T23:59:59.999Z', 'created as given');
    t.equal(r.stderr, 'licensectl: warning: expiryDate: 2020-01-31T23:59:59.999Z geçmişte; lisans kaydedildi ancak süresi dolmuş: '
      + 'get-token ve validate reddeder\n');
    const human = await runCli(h, ['create', '--organization', 'Eski Lisans', '--quota', '1', '--expiry', '2020-01-31', '--password', 'p']);
    t.equal(human.code, 0);
    t.match(human.stdout, /^Created:\n/);
    t.match(human.stderr, /^licensectl: warning: expiryDate: .* geçmişte/);
  });

  t.test('show: key-value block or the API data', async (t) => {
    const human = await runCli(h, ['show', key]);
    expectOk(t, human);
    const [block = '', packages = ''] = human.stdout.trimEnd().split('\n\n');
    const lines = block.split('\n');
    t.equal(lines.length, 12);
    t.match(human.stdout, new RegExp(`License key\\s+${key}\\n`));
    t.match(human.stdout, /Total quota\s+25\nUsed\s+0\nRemaining\s+25 \(100%\)\n/);
    t.match(human.stdout, /\nWebhook\s+-\n/, 'no webhook yet');
    t.match(human.stdout, /\nRate limits\s+the default\n/, 'no limits of its own yet');
    t.match(packages, /^Packages \(spent earliest expiry first\):\nID\s+AMOUNT\s+USED\s+LEFT\s+FORFEITED\s+EXPIRES\s+BOUGHT\s+NOTE\n1\s+25\s+0\s+25\s+0\s/,
      'its one package, as bought with the license');
    const valueColumn = lines.map((l) => /^(\S+(?: \S+)*\s+)/.exec(l)?.[1]?.length);
    t.equal(new Set(valueColumn).size, 1, 'values aligned in one column');
    const json = await runCli(h, ['show', key.toUpperCase(), '--json']);
    expectOk(t, json);
    t.same(jsonOf(json), await read());
  });

  t.test('add-quota: credited once per idempotency key, and a retry says it was credited before', async (t) => {
    const first = await runCli(h, ['add-quota', key, '10', '--idempotency-key', 'order-42', '--json']);
    expectOk(t, first);
    t.equal(jsonOf(first).totalQuota, 35);
    const again = await runCli(h, ['add-quota', key, '10', '--idempotency-key', 'order-42']);
    expectOk(t, again);
    t.match(again.stdout, /^Already credited \(idempotency key "order-42"\): nothing added now\. The license:\n[\s\S]*Total quota\s+35\n/);
    t.notMatch(again.stdout, /Added/, 'never claims to have added it again');
    t.equal((await read()).totalQuota, 35, 'a retried purchase credits once');
    const againJson = await runCli(h, ['add-quota', key, '10', '--idempotency-key', 'order-42', '--json']);
    t.equal(againJson.code, 0);
    t.equal(jsonOf(againJson).totalQuota, 35, '--json: exactly the API\'s data');
    t.equal(againJson.stderr, 'licensectl: already credited: the purchase with idempotency key "order-42" was credited before; nothing added now\n');
    const fresh = await runCli(h, ['add-quota', key, '1', '--idempotency-key', 'order-43']);
    expectOk(t, fresh);
    t.match(fresh.stdout, /^Added 1:\n[\s\S]*Total quota\s+36\n/);
    await runCli(h, ['add-quota', key, '-1']).then((r) => t.equal(r.code, 2));
    t.equal((await read()).totalQuota, 36);
    const other = await runCli(h, ['add-quota', key, '5', '--idempotency-key', 'order-42']);
    expectFailure(t, other, 1, /^licensectl: IDEMPOTENCY_KEY_REUSED: .+\n$/);
  });

  t.test('deactivate, activate, set-domains', async (t) => {
    const off = await runCli(h, ['deactivate', key, '--json']);
    expectOk(t, off);
    t.equal(jsonOf(off).isActive, false);
    t.equal((await read()).isActive, false);
    const on = await runCli(h, ['activate', key]);
    expectOk(t, on);
    t.match(on.stdout, /^Activated:\n[\s\S]*Active\s+yes\n/);
    t.equal((await read()).isActive, true);
    const domains = await runCli(h, ['set-domains', key, 'a.example.com,B.Example.org', '--json']);
    expectOk(t, domains);
    t.same((await read()).domains, ['a.example.com', 'b.example.org']);
    t.same(jsonOf(domains).domains, ['a.example.com', 'b.example.org']);
    expectOk(t, await runCli(h, ['set-domains', key, '']));
    t.same((await read()).domains, [], 'an empty list: any origin');
    expectFailure(t, await runCli(h, ['set-domains', key, 'not a domain!']), 1, /^licensectl: INVALID_REQUEST: domains\[0\]: "not a domain!" bir alan adı değil; beklenen: .+\n$/);
  });

  t.test('set-limits: the limits named change, "default" resets one; show lists the license\'s own', async (t) => {
    const set = await runCli(h, ['set-limits', key, '--validate', '500', '--check-quota', '0', '--json']);
    expectOk(t, set);
    const limits = { getToken: null, signToken: null, validate: 500, checkQuota: 0 };
    t.same(jsonOf(set).rateLimits, limits, '--json: the API\'s data');
    t.same((await read()).rateLimits, limits);
    const more = await runCli(h, ['set-limits', key, '--sign-token', '7', '--validate', 'default']);
    expectOk(t, more);
    t.match(more.stdout, /^Limits set:\n[\s\S]*\nRate limits\s+sign-token 7\/min, check-quota none; the others the default\n/);
    t.same((await read()).rateLimits, { ...limits, validate: null, signToken: 7 }, 'validate back to the default, check-quota kept');
    expectFailure(t, await runCli(h, ['set-limits', key]), 2, /give at least one of --get-token, --sign-token, --validate, --check-quota/);
    expectFailure(t, await runCli(h, ['set-limits', key, '--validate', '1.5']), 2, /--validate must be a whole number from 0 to 10\^9, or "default"/);
    expectFailure(t, await runCli(h, ['set-limits', key, '--check-quota=-1']), 2, /--check-quota must be a whole number/);
    expectFailure(t, await runCli(h, ['set-limits', key, '--get-token', '1000000001']), 2, /--get-token must be a whole number/);
    expectOk(t, await runCli(h, ['set-limits', key, '--sign-token', 'default', '--check-quota', 'DEFAULT']));
    t.same((await read()).rateLimits, { getToken: null, signToken: null, validate: null, checkQuota: null }, 'every limit the default again');
  });

  t.test('set-releases: the allowance a day, shown by show; 0 turns it off', async (t) => {
    const set = await runCli(h, ['set-releases', key, '3', '--json']);
    expectOk(t, set);
    t.equal(jsonOf(set).releasesPerDay, 3, '--json: the API\'s data');
    t.equal((await read()).releasesPerDay, 3);
    const shown = await runCli(h, ['show', key]);
    t.match(shown.stdout, /\nReleases a day\s+3\n/);
    expectOk(t, await runCli(h, ['set-releases', key, '0']));
    t.match((await runCli(h, ['show', key])).stdout, /\nReleases a day\s+none\n/);
    for (const bad of [['1.5'], ['x'], ['1000001']]) {
      expectFailure(t, await runCli(h, ['set-releases', key, ...bad]), 2, /<n> must be a whole number from 0 to 10\^6/);
    }
    t.equal((await read()).releasesPerDay, 0, 'a refused value changed nothing');
  });

  t.test('set-password: from stdin or --password; the old one stops working', async (t) => {
    const r = await runCli(h, ['set-password', key, '--password-stdin'], { input: 'new password 1\r\n' });
    expectOk(t, r);
    t.match(r.stdout, `Password changed for ${key}`);
    t.equal((await h.getToken(key, 's3cret pass')).status, 401);
    t.equal((await h.getToken(key, 'new password 1')).status, 200);
    expectOk(t, await runCli(h, ['set-password', key, '--password', 'new password 2', '--json']));
    t.equal((await h.getToken(key, 'new password 2')).status, 200);
    // no terminal to ask on, no password given: a usage error, nothing changed
    expectFailure(t, await runCli(h, ['set-password', key]), 2, /no terminal to ask the password on: use --password-stdin/);
    expectFailure(t, await runCli(h, ['set-password', key, '--password-stdin']), 2, /the password is empty/);
    t.equal((await h.getToken(key, 'new password 2')).status, 200);
  });

  t.test('set-webhook: the URL with a secret from stdin; the URL alone; "" removes both; the secret never printed', async (t) => {
    const secret = 'a-webhook-secret-of-32-characters';
    const first = await runCli(h, ['set-webhook', key, 'https://hooks.example.com/imza'], {});
    expectFailure(t, first, 1, /^licensectl: INVALID_REQUEST: webhookSecret: .+\n$/);
    const set = await runCli(h, ['set-webhook', key, 'https://hooks.example.com/imza', '--secret-stdin'], { input: `${secret}\n` });
    expectOk(t, set);
    t.match(set.stdout, /^Webhook set:\n[\s\S]*Webhook\s+https:\/\/hooks\.example\.com\/imza \(secret set\)\n/);
    t.notMatch(set.stdout + set.stderr, secret, 'the secret is never printed');
    t.equal((await read()).webhookUrl, 'https://hooks.example.com/imza');
    t.equal((await read()).webhookSecretSet, true);
    const moved = await runCli(h, ['set-webhook', key, 'https://hooks.example.com/v2', '--json']);
    expectOk(t, moved);
    t.equal(jsonOf(moved).webhookUrl, 'https://hooks.example.com/v2', 'the URL alone changes; the secret stays');
    t.equal(jsonOf(moved).webhookSecretSet, true);
    expectFailure(t, await runCli(h, ['set-webhook', key, 'ftp://hooks.example.com', '--secret', secret]), 1, /^licensectl: INVALID_REQUEST: webhookUrl: .+\n$/);
    // http:// and internal targets, refused by the service's defaults (docs/api.md#webhooks): the API's words, nothing changed
    expectFailure(t, await runCli(h, ['set-webhook', key, 'http://hooks.example.com/imza', '--secret', secret]), 1,
      /^licensectl: INVALID_REQUEST: webhookUrl: yalnızca https:\/\/ adresleri kabul edilir; beklenen: bir https:\/\/ adresi\n$/);
    for (const internal of ['https://127.0.0.1:6379/', 'https://169.254.169.254/latest/meta-data/', 'https://[::ffff:127.0.0.1]/', 'https://metadata.google.internal/']) {
      expectFailure(t, await runCli(h, ['set-webhook', key, internal, '--secret', secret]), 1, /^licensectl: INVALID_REQUEST: webhookUrl: iç ağ adreslerine izin verilmez; beklenen: internetteki bir sunucunun adresi\n$/);
    }
    t.equal((await read()).webhookUrl, 'https://hooks.example.com/v2', 'the refused URLs changed nothing');
    expectFailure(t, await runCli(h, ['set-webhook', key, '', '--secret', secret]), 2, /"" removes the webhook: give no secret with it/);
    expectFailure(t, await runCli(h, ['set-webhook', key, 'https://x.example.com', '--ask-secret']), 2, /no terminal to ask the secret on: use --secret-stdin/);
    const removed = await runCli(h, ['set-webhook', key, '']);
    expectOk(t, removed);
    t.match(removed.stdout, /Webhook\s+-\n/);
    t.equal((await read()).webhookUrl, null);
    t.equal((await read()).webhookSecretSet, false, 'removing the URL removes its secret');
  });

  t.test('exit 1: the API\'s code and message on stderr', async (t) => {
    const unknown = randomUUID();
    for (const args of [['show', unknown], ['add-quota', unknown, '1'], ['activate', unknown], ['tokens', unknown], ['show', 'not-a-key']]) {
      expectFailure(t, await runCli(h, args), 1, /^licensectl: LICENSE_NOT_FOUND: Lisans bulunamadı\n$/);
    }
    expectFailure(t, await runCli(h, ['show', key, '--url', h.url, '--token', 'wrong-token'], { bare: true }), 1, /^licensectl: UNAUTHORIZED: Yönetici yetkisi gerekli\n$/);
    const exists = await runCli(h, ['create', '--organization', 'X', '--quota', '1', '--expiry', '2030-01-01', '--key', key, '--password', 'p']);
    expectFailure(t, exists, 1, /^licensectl: LICENSE_EXISTS: .+\n$/);
    const past = await runCli(h, ['create', '--organization', '', '--quota', '1', '--expiry', '2030-01-01', '--password', 'p']);
    expectFailure(t, past, 1, /^licensectl: INVALID_REQUEST: organizationName: .+\n$/);
    const down = await runCli(null, ['show', key, '--url', 'http://127.0.0.1:9', '--token', ADMIN_TOKEN]);
    expectFailure(t, down, 1, /^licensectl: CONNECTION_FAILED: no answer from http:\/\/127\.0\.0\.1:9 /);
  });

  t.test('the environment: LICENSE_URL and ADMIN_TOKEN', async (t) => {
    const r = await runCli(h, ['show', key, '--json'], { bare: true, env: { LICENSE_URL: h.url, ADMIN_TOKEN } });
    expectOk(t, r);
    t.equal(jsonOf(r).licenseKey, key);
    expectFailure(t, await runCli(h, ['show', key], { bare: true, env: { LICENSE_URL: h.url } }), 2, /no admin token: give --token or set ADMIN_TOKEN/);
  });

  t.test('exit 2: usage errors name the mistake and the help to read', async (t) => {
    const cases: [string[], RegExp][] = [
      [['bogus'], /unknown command "bogus"\nTry: licensectl --help\n$/],
      [['show'], /expected <key>, got 0\nTry: licensectl show --help\n$/],
      [['show', key, 'extra'], /expected <key>, got 2/],
      [['add-quota', key, '0'], /<n> must be a whole number from 1/],
      [['add-quota', key, 'ten'], /<n> must be a whole number/],
      [['list', '--limit', '501'], /--limit must be a whole number from 1 to 500/],
      [['list', '--all', '--cursor', 'abc'], /--cursor or --all, not both/],
      [['list', '--colour'], /Unknown option '--colour'/],
      [['tokens', key, '--status', 'all'], /--status must be issued, used or expired/],
      [['create', '--quota', '1', '--expiry', '2030-01-01', '--password', 'p'], /--organization is required/],
      [['create', '--organization', 'x', '--quota', '1.5', '--expiry', '2030-01-01', '--password', 'p'], /--quota must be a whole number/],
      [['create', '--organization', 'x', '--quota', '1', '--expiry', '2030-02-30', '--password', 'p'], /--expiry must be YYYY-MM-DD/],
      [['create', '--organization', 'x', '--quota', '1', '--expiry', '2030-01-01', '--password', 'p', '--password-stdin'], /not both/],
    ];
    for (const [args, message] of cases) expectFailure(t, await runCli(h, args), 2, message);
    expectFailure(t, await runCli(h, ['show', key, '--url', 'ftp://x', '--token', ADMIN_TOKEN], { bare: true }), 2, /--url must be an http/);
  });

  t.test('--help: the main help and each command\'s, exit 0', async (t) => {
    const main = await runCli(null, ['--help']);
    expectOk(t, main);
    const commands = ['create', 'show', 'list', 'add-quota', 'activate', 'deactivate', 'set-domains', 'set-limits', 'set-password', 'set-webhook', 'tokens', 'audit', 'import'];
    for (const c of commands) t.match(main.stdout, new RegExp(`\\n  ${c} +\\S`), `lists ${c}`);
    t.match(main.stdout, /Exit codes: 0 ok, 1 .*, 2 usage error/);
    expectOk(t, await runCli(null, []));
    for (const c of commands) {
      const help = await runCli(null, [c, '--help']);
      expectOk(t, help);
      t.match(help.stdout, new RegExp(`^licensectl ${c} `), `${c} --help`);
      t.match(help.stdout, /--json/);
    }
  });
});
