import t from 'tap';
import { BOB_TOKEN, TWO_ADMINS } from '../helpers/audit.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { jsonOf, runCli } from '../helpers/licensectl.js';

// licensectl audit against a running service: the admin audit log as a table (when, admin,
// address, action, license, what changed) or as the API's data, filtered by license and
// date, a page at a time; the changes licensectl itself makes are recorded under the name
// of the token it was given.

t.test('licensectl audit', async (t) => {
  const h = await startHarness(t, 'licensectlaudit', TWO_ADMINS);
  const created = await runCli(h, ['create', '--organization', 'Denetim A.Ş.', '--quota', '10', '--expiry', '2031-01-31', '--password-stdin', '--json'],
    { input: 'a-password-for-the-cli\n' });
  t.equal(created.code, 0, created.stderr);
  const key = jsonOf(created).licenseKey as string;
  const asBob = (args: string[]) => runCli(h, [...args, '--url', h.url, '--token', BOB_TOKEN], { bare: true });
  t.equal((await asBob(['deactivate', key])).code, 0);
  t.equal((await asBob(['add-quota', key, '5', '--idempotency-key', 'order-9'])).code, 0);
  t.equal((await runCli(h, ['set-password', key, '--password-stdin'], { input: 'another-password-for-it\n' })).code, 0);
  const other = (await h.createLicense()).licenseKey;

  t.test('--json: exactly the API\'s data, filtered by license', async (t) => {
    const r = await runCli(h, ['audit', '--license', key, '--json']);
    t.equal(r.code, 0, r.stderr);
    const data = jsonOf(r);
    t.same(data, (await h.admin('GET', `/admin/v1/audit?licenseKey=${key}`)).body.data);
    t.same(data.items.map((i: { action: string; admin: string }) => [i.action, i.admin]),
      [['update', 'admin'], ['add-quota', 'bob'], ['update', 'bob'], ['create', 'admin']], 'newest first, each under its admin\'s name');
    t.notMatch(r.stdout, /a-password-for-the-cli|another-password-for-it|argon2/);
  });

  t.test('a table: when, admin, address, action, license, the changes', async (t) => {
    const r = await runCli(h, ['audit', '--license', key]);
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    t.match(lines[0], /^WHEN\s+ADMIN\s+ADDRESS\s+ACTION\s+LICENSE KEY\s+CHANGES$/);
    t.equal(lines.length, 1 + 4 + 1);
    t.match(lines[1], new RegExp(`^\\S+Z\\s+admin\\s+127\\.0\\.0\\.1\\s+update\\s+${key}\\s+password: changed -> changed$`));
    t.match(lines[2], new RegExp(`^\\S+Z\\s+bob\\s+127\\.0\\.0\\.1\\s+add-quota\\s+${key}\\s+totalQuota: 10 -> 15 \\(idempotency key order-9\\)$`));
    t.match(lines[3], /\sbob\s+127\.0\.0\.1\s+update\s+\S+\s+isActive: true -> false$/);
    t.match(lines[4], /\sadmin\s+127\.0\.0\.1\s+create\s+\S+\s+domains=\[\], expiryDate=2031-01-31T23:59:59\.999Z, isActive=true, organizationName=Denetim A\.Ş\., password=changed, rateLimits=\{"getToken":null,"validate":null,"signToken":null,"checkQuota":null\}, releasesPerDay=0, totalQuota=10, webhookSecret=null, webhookUrl=null$/);
    t.equal(lines[1]?.indexOf(key), lines[0]?.indexOf('LICENSE KEY'), 'columns aligned');
    t.equal(lines.at(-1), '(4 changes)');
  });

  t.test('every license by default; --since; pages with the cursor printed', async (t) => {
    const all = jsonOf(await runCli(h, ['audit', '--json']));
    t.equal(all.items.length, 5);
    t.equal(all.items[0].licenseKey, other, 'the newest first');
    t.same(jsonOf(await runCli(h, ['audit', '--since', '2999-01-01', '--json'])).items, [], 'since a day to come: nothing');
    t.equal(jsonOf(await runCli(h, ['audit', '--since', '2020-01-01T00:00:00Z', '--json'])).items.length, 5);
    const first = await runCli(h, ['audit', '--limit', '2', '--license', key]);
    const next = jsonOf(await runCli(h, ['audit', '--limit', '2', '--license', key, '--json'])).nextCursor as string;
    t.equal(first.stdout.trimEnd().split('\n').at(-1), `(2 changes; next page: licensectl audit --license ${key} --limit 2 --cursor ${next})`);
    const everything = jsonOf(await runCli(h, ['audit', '--all', '--limit', '2', '--json']));
    t.same(everything, { items: all.items, nextCursor: null }, '--all: every page');
  });

  t.test('mistakes: usage errors (2) and the API\'s refusals (1)', async (t) => {
    const since = await runCli(h, ['audit', '--since', 'yesterday']);
    t.equal(since.code, 2);
    t.match(since.stderr, /--since must be YYYY-MM-DD or an RFC 3339 date-time\nTry: licensectl audit --help\n$/);
    t.equal((await runCli(h, ['audit', '--limit', '0'])).code, 2);
    const license = await runCli(h, ['audit', '--license', 'not-a-key']);
    t.equal(license.code, 1);
    t.match(license.stderr, /^licensectl: INVALID_REQUEST: licenseKey: "not-a-key" geçerli değil; beklenen: bir UUID/);
    const help = await runCli(null, ['audit', '--help']);
    t.equal(help.code, 0);
    t.match(help.stdout, /^licensectl audit \[--license <key>\] \[--since <date>\]/);
    const wrong = await runCli(h, ['audit', '--url', h.url, '--token', `${ADMIN_TOKEN}x`], { bare: true });
    t.equal(wrong.code, 1);
    t.match(wrong.stderr, /UNAUTHORIZED/);
  });
});
