import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { jsonOf, runCli } from '../helpers/licensectl.js';
import { claimsOf } from '../helpers/jwt.js';
import { mintTokens } from '../helpers/tokens.js';
import { pollUntil } from '../helpers/wait.js';

// licensectl list and tokens against a running service: pages by --limit and --cursor,
// every page with --all, as tables or as the API's data.

t.test('licensectl list and tokens', async (t) => {
  const h = await startHarness(t, 'licensectllists', { RATE_GET_TOKEN_PER_MIN: '0', RATE_SIGN_TOKEN_PER_MIN: '0', RATE_VALIDATE_PER_MIN: '0' });
  const keys: string[] = [];
  for (let i = 0; i < 5; i++) keys.push((await h.createLicense({ organizationName: `Liste ${i}`, totalQuota: 10 })).licenseKey);

  t.test('list: pages of 2 across 3 pages, by the cursor each page prints', async (t) => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await runCli(h, ['list', '--limit', '2', '--json', ...(cursor === null ? [] : ['--cursor', cursor])]);
      t.equal(r.code, 0, r.stderr);
      const page = jsonOf(r);
      const api = await h.admin('GET', `/admin/v1/licenses?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      t.same(page, api.body.data, 'exactly the API\'s data');
      seen.push(...page.items.map((l: { licenseKey: string }) => l.licenseKey));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    t.equal(pages, 3);
    t.same(seen, keys);
  });

  t.test('list --all: every page in one document; a table by default', async (t) => {
    const all = await runCli(h, ['list', '--all', '--limit', '2', '--json']);
    t.equal(all.code, 0, all.stderr);
    const data = jsonOf(all);
    t.equal(data.nextCursor, null);
    t.same(data.items, (await h.admin('GET', '/admin/v1/licenses')).body.data.items);

    const human = await runCli(h, ['list', '--limit', '2']);
    t.equal(human.code, 0);
    const lines = human.stdout.trimEnd().split('\n');
    t.match(lines[0], /^LICENSE KEY\s+ORGANIZATION\s+USED\s+TOTAL\s+LEFT\s+EXPIRY\s+ACTIVE\s+DOMAINS$/);
    t.match(lines[1], new RegExp(`^${keys[0]}  Liste 0\\s+0\\s+10\\s+10\\s+\\d{4}-\\d\\d-\\d\\d\\s+yes\\s+\\(any origin\\)$`));
    t.equal(lines[1]?.indexOf('Liste'), lines[0]?.indexOf('ORGANIZATION'), 'columns aligned');
    const next = jsonOf(await runCli(h, ['list', '--limit', '2', '--json'])).nextCursor as string;
    t.equal(lines[3], `(2 licenses; next page: licensectl list --limit 2 --cursor ${next})`, 'the next page\'s command keeps --limit');
    const everything = await runCli(h, ['list', '--all']);
    t.equal(everything.stdout.trimEnd().split('\n').length, 1 + 5 + 1);
    t.match(everything.stdout, /\(5 licenses\)\n$/);
  });

  t.test('tokens: after redeeming some, with their status once the worker wrote them', async (t) => {
    const lic = { licenseKey: keys[1] as string, password: 'correct horse battery staple' };
    const { tokens } = await mintTokens(h, lic, 4);
    const ids = tokens.map((tok) => claimsOf(tok).token_id);
    t.equal((await h.validate(tokens[0], 'https://imza.example.com')).status, 200);
    t.equal((await h.validate(tokens[2])).status, 200);
    const used = await pollUntil(
      () => runCli(h, ['tokens', lic.licenseKey, '--status', 'used', '--json']),
      (r) => r.code === 0 && jsonOf(r).items.length === 2,
    );
    t.same(jsonOf(used).items.map((i: { tokenId: string }) => i.tokenId).sort(), [ids[0], ids[2]].sort());
    t.same(jsonOf(used), (await h.admin('GET', `/admin/v1/licenses/${lic.licenseKey}/tokens?status=used`)).body.data);
    const all = await pollUntil(() => runCli(h, ['tokens', lic.licenseKey, '--json']), (r) => jsonOf(r).items.length === 4);
    t.same(jsonOf(all).items.map((i: { tokenId: string }) => i.tokenId).sort(), [...ids].sort());
    const issued = jsonOf(await runCli(h, ['tokens', lic.licenseKey, '--status', 'issued', '--json']));
    t.same(issued.items.map((i: { tokenId: string }) => i.tokenId).sort(), [ids[1], ids[3]].sort());

    const human = await runCli(h, ['tokens', lic.licenseKey]);
    t.equal(human.code, 0);
    const lines = human.stdout.trimEnd().split('\n');
    t.match(lines[0], /^TOKEN ID\s+TYPE\s+STATUS\s+ISSUED\s+EXPIRES\s+USED\s+ORIGIN$/);
    t.equal(lines.length, 1 + 4 + 1);
    const row = lines.find((l) => l.startsWith(ids[0] as string));
    t.match(row, /\s0\s+used\s+\S+Z\s+\S+Z\s+\S+Z\s+https:\/\/imza\.example\.com$/);
    t.match(lines.find((l) => l.startsWith(ids[1] as string)), /\sissued\s+\S+Z\s+\S+Z\s+-\s+-$/);
    t.equal(lines.at(-1), '(4 tokens)');

    const paged = await runCli(h, ['tokens', lic.licenseKey, '--limit', '3', '--all', '--json']);
    t.same(jsonOf(paged), jsonOf(all), '--all follows the cursors to the same list');

    // the next page's command, run as printed, goes on with the same filter
    const firstUsed = await runCli(h, ['tokens', lic.licenseKey, '--status', 'used', '--limit', '1']);
    const footer = firstUsed.stdout.trimEnd().split('\n').at(-1) as string;
    t.match(footer, /^\(1 token; next page: licensectl tokens \S+ --status used --limit 1 --cursor \S+\)$/, footer);
    const printed = (/next page: licensectl (.*)\)$/.exec(footer)?.[1] ?? '').split(' ');
    const nextUsed = jsonOf(await runCli(h, [...printed, '--json']));
    t.same(nextUsed.items.map((i: { status: string }) => i.status), ['used'], 'the printed next page: the other used token only');
  });
});
