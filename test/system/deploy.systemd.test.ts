import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { STOP_FLUSH_MS } from '../../src/stopFlush.js';

// deploy/systemd as an operator installs it: the unit passes systemd's own check, starts what
// `npm start` starts, gives a stop the time the service takes, and its environment file is a
// configuration the service accepts, pointing where the nginx front sends requests.

const run = promisify(execFile);
const repo = (file: string) => fileURLToPath(new URL(`../../../${file}`, import.meta.url));
const UNIT = repo('deploy/systemd/license-service.service');
const ENV_FILE = repo('deploy/systemd/license-service.env.example');

/** The unit's settings, each key's values in order (a later line of the same key adds to the list). */
function unitSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) settings.set(m[1] as string, [...(settings.get(m[1] as string) ?? []), m[2] as string]);
  }
  return settings;
}

/**
 * The example environment file as an operator fills it in: each secret it ships empty made
 * by the command its comment gives (`sed -i "s|^KEY=$|KEY=$(command)|"`), and its
 * SIGNING_KEYS_FILE made as its comment says (openssl genpkey), here in a temporary directory.
 */
async function exampleEnvironment(t: Test): Promise<Record<string, string>> {
  const text = readFileSync(ENV_FILE, 'utf8');
  const env = environmentFile(text);
  for (const [, key, command] of text.matchAll(/^#.*s\|\^(\w+)=\$\|\1=\$\(([^)]+)\)\|/gm)) {
    t.equal(env[key as string], '', `${key}: shipped empty, with the command that makes it`);
    const [file, ...args] = (command as string).split(' ');
    env[key as string] = (await run(file as string, args)).stdout.trim();
  }
  t.ok(env.JWT_SECRET, 'the comments make JWT_SECRET');
  t.equal(env.DATABASE_URL, '', 'DATABASE_URL shipped empty: the line the database step prints goes there');
  env.DATABASE_URL = `postgres://license:${(await run('openssl', ['rand', '-hex', '24'])).stdout.trim()}@127.0.0.1:5432/license`;
  t.equal(env.SIGNING_KEYS_FILE, '/etc/license-service/signing-keys.pem', 'the example names the signing key file');
  const dir = mkdtempSync(path.join(tmpdir(), 'lic-deploy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keyFile = path.join(dir, 'signing-keys.pem');
  // the key made by docs/deployment.md's own command, readable by its owner only from the start
  const made = /^\s*sudo sh -c '(umask 077 && openssl genpkey [^']*)'$/m.exec(readFileSync(repo('docs/deployment.md'), 'utf8'));
  t.ok(made, 'the document makes the key under umask 077');
  await run('sh', ['-c', (made?.[1] ?? '').replace('/etc/license-service/signing-keys.pem', keyFile)]);
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the private key was never readable by group or others');
  return { ...env, SIGNING_KEYS_FILE: keyFile };
}

/** An EnvironmentFile as systemd reads this one: KEY=value lines, # comments. */
function environmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1] as string] = m[2] as string;
  }
  return env;
}

const unit = unitSettings(readFileSync(UNIT, 'utf8'));
const one = (key: string): string => {
  const values = unit.get(key) ?? [];
  if (values.length !== 1) throw new Error(`${key}: ${values.length} lines in the unit`);
  return values[0] as string;
};

t.test('systemd-analyze verify finds nothing to say', async (t) => {
  const { stdout, stderr } = await run('systemd-analyze', ['verify', UNIT]).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    t.fail(`systemd-analyze verify: ${err.message}`);
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  });
  t.equal(`${stdout}${stderr}`.trim(), '', 'no warning');
});

t.test('the unit starts what npm start starts, and stops as the service stops', async (t) => {
  const pkg = JSON.parse(readFileSync(repo('package.json'), 'utf8')) as { scripts: { start: string } };
  const [, script] = pkg.scripts.start.split(' ');
  t.equal(one('ExecStart'), `/usr/bin/node ${one('WorkingDirectory')}/${script}`, 'ExecStart runs the start script from the working directory');
  t.equal(one('KillMode'), 'mixed', 'SIGTERM to the primary alone: it stops its children in order');
  t.equal(one('KillSignal'), 'SIGTERM');
  const stopSeconds = Number(/^(\d+)s$/.exec(one('TimeoutStopSec'))?.[1]);
  const deadline = loadConfig(await exampleEnvironment(t)).shutdownTimeoutMs + STOP_FLUSH_MS + 4000;
  t.ok(stopSeconds * 1000 > deadline, `TimeoutStopSec (${stopSeconds} s) outlasts the primary's own stop deadline (${deadline} ms)`);
  t.ok(Number(one('LimitNOFILE')) >= 65536, 'a descriptor for every connection');
  t.equal(one('Restart'), 'on-failure');
  t.equal(one('EnvironmentFile'), '/etc/license-service/env');
});

t.test('the environment file is a configuration the service accepts, behind the front', async (t) => {
  const env = await exampleEnvironment(t);
  const config = loadConfig(env);
  t.equal(config.trustProxy, 1, 'one trusted hop: nginx');
  t.equal(config.host, '127.0.0.1', 'reachable through nginx only');
  t.equal(config.tls, null, 'nginx terminates TLS');
  const nginx = readFileSync(repo('deploy/nginx/license-service.conf'), 'utf8');
  t.match(nginx, new RegExp(`server ${config.host}:${config.port} `), 'the front sends requests where the service listens');
  t.notOk('WORKERS' in env, 'WORKERS unset: one process per core');
});

t.test('the sysctl file names settings this kernel has, with values sysctl reads back', async (t) => {
  const lines = readFileSync(repo('deploy/sysctl/90-license-service.conf'), 'utf8').split('\n').filter((l) => /^\s*[a-z]/.test(l));
  t.ok(lines.length > 0, 'at least one setting');
  for (const line of lines) {
    const m = /^\s*([a-z0-9_.]+)\s*=\s*(\S+)\s*$/.exec(line);
    t.ok(m, `key = value: ${line}`);
    if (!m) continue;
    const key = m[1] as string;
    // a setting the kernel lacks is an error at boot (sysctl --system prints it, and skips it)
    const current = readFileSync(`/proc/sys/${key.replaceAll('.', '/')}`, 'utf8').trim();
    t.match(current, /^\d+$/, `${key} exists here (now ${current})`);
    t.match(m[2], /^\d+$/, `${key}: a number`);
  }
});
