import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CsvParser } from '../../src/cli/licensectl/csv.js';
import { ADMIN_TOKEN, startHarness } from '../helpers/harness.js';
import { jsonOf, runCli } from '../helpers/licensectl.js';

// licensectl import <file.csv> against a running service: good rows created (what reached
// Postgres), bad rows and a duplicate rejected into the rejects file with their original
// columns and a reason, the summary, the exit code (0 all created, 1 some rejected, 2 usage).

async function readCsv(path: string): Promise<string[][]> {
  const parser = new CsvParser();
  return [...parser.push(await readFile(path, 'utf8')), ...parser.end()].map((r) => r.fields);
}

t.test('licensectl import', async (t) => {
  const h = await startHarness(t, 'licensectlimport', { RATE_GET_TOKEN_PER_MIN: '0' });
  const dir = await mkdtemp(join(tmpdir(), 'licensectl-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const existing = await h.createLicense({ organizationName: 'Önceden Var' });
  const k = Array.from({ length: 10 }, () => randomUUID());

  const header = 'licenseKey,organizationName,password,totalQuota,expiryDate,isActive,domains';
  const lines = [
    `\uFEFF${header}`,
    `${k[1]},"Acme, ""Ltd""",pw1,10,2030-12-31,,a.example.com;*.b.example.com`,
    `${k[2]},"Beta A.Ş.","pw 2",0,2031-01-01T10:00:00Z,false,`,
    ',Keyless,pw3,5,2030-06-01,yes,',
    '',
    `${k[4]},Bad Quota,pw,ten,2030-01-01,,`,
    `${k[5]},Too Few,pw`,
    `${k[6]},Bad Date,pw,1,2030-13-01,,`,
    `${k[7]},Bad Flag,pw,1,2030-01-01,maybe,`,
    `${k[8]},,pw,1,2030-01-01,,`,
    `${k[9]},Bad Domain,pw,1,2030-01-01,,not a domain!`,
    `${existing.licenseKey},Kopya,pw,1,2030-01-01,,`,
  ];
  const file = join(dir, 'licenses.csv');
  await writeFile(file, `${lines.join('\r\n')}\r\n`);

  t.test('good rows created, bad ones and the duplicate rejected with their reason; exit 1', async (t) => {
    const r = await runCli(h, ['import', file, '--json']);
    t.equal(r.code, 1, `exit 1 when a row was rejected: ${r.stderr}`);
    t.equal(r.stderr, '', 'no progress lines for a short import off a terminal');
    const summary = jsonOf(r);
    t.match(summary, { created: 3, rejected: 7, total: 10, warned: 0, rejectsFile: `${file}.rejected.csv` });
    t.same(Object.keys(summary).sort(), ['created', 'rejected', 'rejectsFile', 'seconds', 'total', 'warned']);
    t.type(summary.seconds, 'number');

    const rows = await h.sql`select license_key, organization_name, total_quota::int as q, expiry_date, is_active, domains
      from licenses order by organization_name`;
    t.same(rows.map((row) => row.organization_name), ['Acme, "Ltd"', 'Beta A.Ş.', 'Keyless', 'Önceden Var']);
    const acme = rows.find((row) => row.license_key === k[1]);
    t.match(acme, { q: 10, is_active: true, domains: ['a.example.com', '*.b.example.com'] });
    t.equal((acme?.expiry_date as Date).toISOString(), '2030-12-31T23:59:59.999Z', 'a date alone: valid through that day');
    const beta = rows.find((row) => row.license_key === k[2]);
    t.match(beta, { q: 0, is_active: false, domains: [] });
    t.equal((beta?.expiry_date as Date).toISOString(), '2031-01-01T10:00:00.000Z');
    t.equal(rows.find((row) => row.organization_name === 'Önceden Var')?.license_key, existing.licenseKey, 'the duplicate changed nothing');
    t.equal((await h.getToken(k[1] as string, 'pw1')).status, 200, 'the password of the row');
    t.equal((await h.getToken(k[2] as string, 'pw 2')).status, 401, 'an inactive license (its password checked first)');

    const rejected = await readCsv(summary.rejectsFile);
    t.same(rejected[0], [...header.split(','), 'reason'], 'the original header and a reason column');
    t.equal(rejected.length, 8);
    const reasons = new Map(rejected.slice(1).map((row) => [row[0], row]));
    const expect: [string, number, RegExp][] = [
      [k[4] as string, 6, /^line 6: totalQuota: not a whole number from 0 to 10\^12: "ten"$/],
      [k[5] as string, 7, /^line 7: wrong column count: expected 7, got 3$/],
      [k[6] as string, 8, /^line 8: expiryDate: not YYYY-MM-DD/],
      [k[7] as string, 9, /^line 9: isActive: not true or false: "maybe"$/],
      [k[8] as string, 10, /^line 10: INVALID_REQUEST: organizationName: /],
      [k[9] as string, 11, /^line 11: INVALID_REQUEST: domains\[0\]: "not a domain!" bir alan adı değil; beklenen: bir alan adı/],
      [existing.licenseKey, 12, /^line 12: LICENSE_EXISTS: Bu lisans anahtarı zaten kayıtlı$/],
    ];
    for (const [key, line, reason] of expect) {
      const row = reasons.get(key);
      t.match(row?.[7], reason, `reason of line ${line}`);
      const original = (lines[line - 1] as string).split(',');
      if (key !== k[5]) t.same(row?.slice(0, 7), original, `line ${line}'s columns as they were`);
    }
    t.same(reasons.get(k[5])?.slice(0, 7), [k[5], 'Too Few', 'pw', '', '', '', ''], 'a short row padded to the header');
  });

  t.test('running it again creates nothing twice: rows with a key are LICENSE_EXISTS', async (t) => {
    const r = await runCli(h, ['import', file, '--json', '--rejects', join(dir, 'again.csv')]);
    t.equal(r.code, 1);
    t.match(jsonOf(r), { created: 1, rejected: 9, total: 10, rejectsFile: join(dir, 'again.csv') }, 'only the keyless row again');
    const rejected = await readCsv(join(dir, 'again.csv'));
    for (const key of [k[1], k[2]]) t.match(rejected.find((row) => row[0] === key)?.[7], /LICENSE_EXISTS/);
    const [count] = await h.sql`select count(*)::int as n from licenses where license_key = any(${[k[1], k[2]] as string[]})`;
    t.equal(count?.n, 2);
  });

  t.test('every row created: exit 0, the summary as a table, no rejects file (an old one removed)', async (t) => {
    const clean = join(dir, 'clean.csv');
    await writeFile(clean, 'organizationName,password,totalQuota,expiryDate\nOne,p,1,2030-01-01\nTwo,p,2,2030-01-01\n');
    await writeFile(`${clean}.rejected.csv`, 'stale\n');
    const r = await runCli(h, ['import', clean]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^Created\s+2\nRejected\s+0\nTotal\s+2\nTime\s+[\d.]+ s\n$/);
    t.notOk(existsSync(`${clean}.rejected.csv`), 'no rejects file');
  });

  t.test('rows whose expiry has passed: created, counted and named on stderr with the API\'s warning', async (t) => {
    const old = join(dir, 'old.csv');
    await writeFile(old, 'organizationName,password,totalQuota,expiryDate\nOld One,p,1,2020-01-01\nNew,p,1,2030-01-01\nOld Two,p,1,2021-05-05T00:00:00Z\n');
    const r = await runCli(h, ['import', old]);
    t.equal(r.code, 0, 'created: not a rejection');
    t.match(r.stdout, /^Created\s+3\nRejected\s+0\nTotal\s+3\nCreated with a warning\s+2\nTime\s+[\d.]+ s\n$/);
    const warnings = r.stderr.split('\n').filter(Boolean).sort();
    t.same(warnings, [
      'licensectl: warning: line 2: expiryDate: 2020-01-01T23:59:59.999Z geçmişte; lisans kaydedildi ancak süresi dolmuş: get-token ve validate reddeder',
      'licensectl: warning: line 4: expiryDate: 2021-05-05T00:00:00.000Z geçmişte; lisans kaydedildi ancak süresi dolmuş: get-token ve validate reddeder',
    ]);
    const json = await runCli(h, ['import', old, '--json']);
    t.match(jsonOf(json), { created: 3, warned: 2 });
  });

  t.test('a big file streams through: 3,000 rows in many chunks', async (t) => {
    const big = join(dir, 'big.csv');
    const row = `${'x'.repeat(40)},p,1\n`; // wrong column count: refused here, no request
    await writeFile(big, `organizationName,password,totalQuota,expiryDate\n${row.repeat(3000)}`);
    const r = await runCli(h, ['import', big, '--json']);
    t.equal(r.code, 1);
    t.match(jsonOf(r), { created: 0, rejected: 3000, total: 3000 });
    t.equal((await readCsv(`${big}.rejected.csv`)).length, 3001);
  });

  t.test('exit 2 for a file that is not one; exit 1 once for a wrong token', async (t) => {
    const bad = join(dir, 'bad.csv');
    await writeFile(bad, 'organizationName,password,quota\nx,p,1\n');
    const header = await runCli(h, ['import', bad]);
    t.equal(header.code, 2);
    t.match(header.stderr, /the header's columns: unknown quota; missing totalQuota, expiryDate/);
    const missing = await runCli(h, ['import', join(dir, 'nope.csv')]);
    t.equal(missing.code, 2);
    t.match(missing.stderr, /cannot read .*nope\.csv: ENOENT/);
    const folder = await runCli(h, ['import', dir]);
    t.equal(folder.code, 2, 'a directory: exit 2, not an unexpected failure');
    t.match(folder.stderr, new RegExp(`^licensectl: cannot read ${dir}: EISDIR\n`));
    const own = join(dir, 'own.csv');
    await writeFile(own, 'organizationName,password,totalQuota,expiryDate\nA,pw,1,2030-01-01\n');
    for (const rejects of [own, join(dir, '.', 'own.csv')]) {
      const same = await runCli(h, ['import', own, '--rejects', rejects]);
      t.equal(same.code, 2, `--rejects ${rejects}: exit 2`);
      t.match(same.stderr, /--rejects names the file being imported/);
    }
    t.match(await readFile(own, 'utf8'), /^organizationName,/, 'the file to import is still there, untouched');
    await writeFile(join(dir, 'empty.csv'), '');
    t.match((await runCli(h, ['import', join(dir, 'empty.csv')])).stderr, /empty \(no header row\)/);
    t.match((await runCli(h, ['import', file, '--concurrency', '0'])).stderr, /--concurrency must be a whole number from 1 to 64/);
    const wrong = await runCli(h, ['import', file, '--url', h.url, '--token', `${ADMIN_TOKEN}x`], { bare: true });
    t.equal(wrong.code, 1);
    t.equal(wrong.stderr, 'licensectl: UNAUTHORIZED: Yönetici yetkisi gerekli\n', 'one message, not one per row');
    t.equal(wrong.stdout, '');
  });
});
