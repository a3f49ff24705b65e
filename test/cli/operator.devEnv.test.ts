import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ADMIN_TOKEN, REDIS_URL, startHarness, uniqueName } from '../helpers/harness.js';
import { DEAD_LETTERS, jsonOf, runCli, runScript } from '../helpers/licensectl.js';

// The operator commands read what `make run` gives the server: .env.dev's variables where the
// environment sets none (DEV_ENV_FILE names the file here, as a checkout's .env.dev), the
// environment winning; a line bash would read differently stops them with one line naming it.

const dir = mkdtempSync(path.join(tmpdir(), 'licensectl-devenv-'));

function devEnv(name: string, lines: string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, `# development settings written by make run; delete this file to regenerate\n${lines.join('\n')}\n`);
  return file;
}

t.test('dead-letters takes REDIS_PREFIX from .env.dev; the environment wins', async (t) => {
  const fromFile = uniqueName('fromfile');
  const file = devEnv('prefix.env', [`REDIS_URL=${REDIS_URL}`, `REDIS_PREFIX=${fromFile}`, "LOG_LEVEL='silent'"]);
  const read = await runScript(DEAD_LETTERS, ['count'], { env: { DEV_ENV_FILE: file } });
  t.equal(read.code, 0, read.stderr);
  t.equal(read.stdout, '0\n');
  t.match(read.stderr, `Redis prefix "${fromFile}"`, 'the prefix of .env.dev');
  const fromEnv = uniqueName('fromenv');
  const wins = await runScript(DEAD_LETTERS, ['count'], { env: { DEV_ENV_FILE: file, REDIS_PREFIX: fromEnv } });
  t.equal(wins.code, 0, wins.stderr);
  t.match(wins.stderr, `Redis prefix "${fromEnv}"`, 'the environment wins');
  const none = await runScript(DEAD_LETTERS, ['count'], { env: { DEV_ENV_FILE: path.join(dir, 'absent.env'), REDIS_URL } });
  t.equal(none.code, 0, none.stderr);
  t.match(none.stderr, 'Redis prefix "lic"', 'no file: the environment alone (production), the default prefix');
});

t.test('a malformed or unreadable .env.dev: one line naming it, exit 1', async (t) => {
  const cases: [string, string[], RegExp][] = [
    ['spaces.env', ['REDIS_PREFIX=a b'], /spaces\.env line 2 is not NAME=value .*"REDIS_PREFIX=a b"/],
    ['expansion.env', ['REDIS_PREFIX="$HOME"'], /expansion\.env line 2 is not NAME=value/],
    ['noequals.env', ['REDIS_PREFIX'], /noequals\.env line 2 is not NAME=value/],
    ['badname.env', ['1PREFIX=x'], /badname\.env line 2 is not NAME=value/],
    // bash drops a NUL from a value: read as the server would not
    ['nul.env', ["REDIS_PREFIX='a\u0000b'"], /nul\.env line 2 is not NAME=value/],
    ['nul2.env', ['REDIS_PREFIX="a\u0000b"'], /nul2\.env line 2 is not NAME=value/],
  ];
  for (const [name, lines, message] of cases) {
    const r = await runScript(DEAD_LETTERS, ['count'], { env: { DEV_ENV_FILE: devEnv(name, lines), REDIS_URL } });
    t.equal(r.code, 1, `${name}: exit 1`);
    t.equal(r.stdout, '');
    t.match(r.stderr, new RegExp(`^dead-letters: ${dir}/${message.source}`));
    t.equal(r.stderr.split('\n').filter(Boolean).length, 1, `one line: ${r.stderr}`);
  }
  const unreadable = await runScript(DEAD_LETTERS, ['count'], { env: { DEV_ENV_FILE: dir, REDIS_URL } });
  t.equal(unreadable.code, 1);
  t.match(unreadable.stderr, /^dead-letters: cannot read .* \(EISDIR\)/);
});

t.test('licensectl finds the server and its token in .env.dev, as make run wrote them', async (t) => {
  const h = await startHarness(t, 'ctldevenv');
  const port = new URL(h.url).port;
  const file = devEnv('server.env', ['JWT_SECRET=0123456789abcdef0123456789abcdef', `ADMIN_TOKEN=${ADMIN_TOKEN}`, 'ALLOW_HTTP=1',
    'HOST=127.0.0.1', `PORT=${port}`]);
  const list = await runCli(null, ['list', '--json'], { env: { DEV_ENV_FILE: file } });
  t.equal(list.code, 0, list.stderr);
  t.same(jsonOf(list), { items: [], nextCursor: null }, 'no variable set, no flag: the server of .env.dev');
  const wrongToken = await runCli(null, ['list'], { env: { DEV_ENV_FILE: file, ADMIN_TOKEN: 'another-token-0123456789' } });
  t.equal(wrongToken.code, 1, 'the environment\'s token wins');
  t.match(wrongToken.stderr, /^licensectl: UNAUTHORIZED/);
  const wildcard = devEnv('wildcard.env', [`ADMIN_TOKEN=${ADMIN_TOKEN}`, 'HOST=0.0.0.0', `PORT=${port}`]);
  const reached = await runCli(null, ['list', '--json'], { env: { DEV_ENV_FILE: wildcard } });
  t.equal(reached.code, 0, `a server on 0.0.0.0 is reached on loopback: ${reached.stderr}`);
  const noToken = await runCli(null, ['list'], { env: { DEV_ENV_FILE: path.join(dir, 'absent.env') } });
  t.equal(noToken.code, 2);
  t.match(noToken.stderr, /no admin token: give --token or set ADMIN_TOKEN/);
});
