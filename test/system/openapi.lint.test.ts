import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { startContract } from '../helpers/contract.js';

// Redocly CLI's lint (redocly.yaml: the recommended rules, strict) of the documents a
// started service serves (/openapi.json, /admin/openapi.json), failing on any error or
// warning; and `npm run openapi [-- --admin]`, which builds a document without starting the
// service, builds those very documents (and lints clean for the configurations that change
// them: no ADMIN_TOKEN, CORS_ORIGINS, METRICS_TOKEN, a limit off).

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const redocly = path.join(path.dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
const offline = path.join(root, 'dist', 'src', 'cli', 'openapi.js');
const dir = await mkdtemp(path.join(tmpdir(), 'openapi-lint-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

interface Lint {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; message: string; location?: { pointer?: string }[] }[];
}

/** Redocly's findings on a document, with the repository's redocly.yaml. */
async function lint(name: string, json: string): Promise<Lint> {
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, json);
  const out = await run(process.execPath, [redocly, 'lint', '--config', path.join(root, 'redocly.yaml'), '--format=json', file], {
    cwd: root, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 16 << 20,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return JSON.parse(out.stdout) as Lint;
}

function clean(tap: Test, name: string, result: Lint): void {
  const found = result.problems.map((p) => `${p.ruleId} at ${p.location?.[0]?.pointer ?? '?'}: ${p.message}`);
  tap.same(found, [], `${name}: Redocly finds nothing`);
  tap.same(result.totals, { errors: 0, warnings: 0, ignored: 0 }, `${name}: no error, no warning, nothing ignored`);
}

/** Instants (the examples' timestamps) as one value: two builds differ by them only. */
const timeless = (json: string) => json.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<instant>');

const k = await startContract(t, 'oa-lint');
const served = (await k.c.request('GET', '/openapi.json')).text;
const servedAdmin = (await k.c.request('GET', '/admin/openapi.json')).text;

/** `npm run openapi -- args` in this environment (with `env` over it). */
const generate = (args: string[], env: Record<string, string> = {}) => run(process.execPath, [offline, ...args], {
  env: { PATH: process.env.PATH ?? '', DEV_ENV_FILE: '', ...k.env, ...env }, maxBuffer: 16 << 20,
});

t.test('the documents the service serves lint clean', async (t) => {
  clean(t, 'served', await lint('served', served));
  clean(t, 'served admin', await lint('served-admin', servedAdmin));
});

t.test('npm run openapi builds the documents the service serves, without starting it', async (t) => {
  t.equal(timeless((await generate([])).stdout.trim()), timeless(served), 'the same document');
  t.equal(timeless((await generate([], { SIGNING_KEYS: '' })).stdout.trim()), timeless(served), 'without signing keys too: it documents their 503s either way');
  t.equal(timeless((await generate(['--admin'])).stdout.trim()), timeless(servedAdmin), '--admin: the admin document');
  t.equal(timeless((await generate(['--admin'], { ADMIN_TOKEN: '' })).stdout.trim()), timeless(servedAdmin),
    '--admin without an admin token set: the document of an instance that has one');
  const usage = await generate(['--nothing']).catch((err: { code?: number; stderr?: string }) => err);
  t.equal((usage as { code?: number }).code, 1, 'an unknown flag is refused');
  t.match((usage as { stderr?: string }).stderr, /usage: npm run openapi -- \[--admin\] \[file\]/);
});

t.test('other configurations lint clean too', async (t) => {
  const variants: Record<string, Record<string, string>> = {
    'no ADMIN_TOKEN': { ADMIN_TOKEN: '' },
    'CORS_ORIGINS and METRICS_TOKEN': { CORS_ORIGINS: 'https://*.ornek.com.tr', METRICS_TOKEN: 'metrics-token-0123456789' },
    'validate off, METRICS=0': { RATE_VALIDATE_PER_MIN: '0', METRICS: '0' },
  };
  for (const [name, env] of Object.entries(variants)) {
    clean(t, name, await lint(name.replace(/\W+/g, '-'), (await generate([], env)).stdout));
    clean(t, `${name}, admin`, await lint(`${name.replace(/\W+/g, '-')}-admin`, (await generate(['--admin'], env)).stdout));
  }
});

t.test('a document with a problem fails the lint (the lint can fail)', async (t) => {
  const broken = JSON.parse(served) as { paths: Record<string, Record<string, { operationId?: string }>> };
  delete broken.paths['/healthz']!.get!.operationId;
  const result = await lint('broken', JSON.stringify(broken));
  t.ok(result.totals.errors > 0, `an operation without operationId is an error (${result.problems.map((p) => p.ruleId).join(', ')})`);
});
