import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { LIVE_COUNTS, startHarness, type Harness } from '../helpers/harness.js';

// @license-service/client as a user gets it: `npm pack` of packages/client (the build
// `npm run build` made), checked by arethetypeswrong (every entry point, the ./members subpath
// too, resolves to types under node10, node16 from ESM and from CommonJS, and bundler) and
// publint, installed from the tarball into a project of its own outside the repository, and
// compiled there with the repository's TypeScript four ways: an ES module under node16
// resolution (the program of docs/sdk.md's quick start, as printed there, on a license with
// domains), an ES module under bundler resolution with the browser's library and no Node
// types, a CommonJS module (`import x = require()`) and a CommonJS module under the old node10
// resolution, which reads no exports. Each compiled program runs against the service and
// prints what it saw (the quick start also as plain JavaScript, a .mjs file); the types each
// compilation read must be the build of its kind (ESM or CommonJS), and the tarball must hold
// the SDK and nothing else.

const exec = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE_DIR = join(REPO, 'packages/client');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const ATTW = join(REPO, 'node_modules/@arethetypeswrong/cli/dist/index.js');
const NODE_TYPES = join(REPO, 'node_modules/@types');
const DOC = join(REPO, 'docs/sdk.md');

const MODULES = ['claims', 'client', 'encoding', 'errors', 'handoff', 'index', 'keyset', 'members', 'types', 'verify'];

/** The environment without npm's own variables: a test run by `npm test` must not hand them to the npm it runs. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))), ...extra };
}

async function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()): Promise<string> {
  try {
    return (await exec(file, args, { cwd, env, timeout: 60_000, maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, { cause: err });
  }
}

/** The files tsc read to compile a consumer (--listFiles); on a failure, its errors without that list. */
async function compile(dir: string): Promise<string> {
  try {
    return (await exec(process.execPath, [TSC, '-p', dir, '--listFiles'], { cwd: dir, env: cleanEnv(), timeout: 60_000, maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const errors = ((err as { stdout?: string }).stdout ?? '').split('\n').filter((line) => !line.startsWith('/'));
    throw new Error(`tsc -p ${dir} failed:\n${errors.join('\n')}`, { cause: err });
  }
}

/** The quick start of docs/sdk.md: the ```ts block after the marker that names this test. */
async function quickStart(): Promise<string> {
  const doc = await readFile(DOC, 'utf8');
  const block = /<!-- compiled and run by test\/sdk\/package\.test\.ts -->\s*```ts\n([\s\S]*?)\n```/.exec(doc);
  if (!block) throw new Error('docs/sdk.md: no quick start block after its marker');
  return block[1] as string;
}

interface Consumer {
  dir: string;
  /** the consumer's package.json type */
  type: 'module' | 'commonjs';
  compilerOptions: Record<string, unknown>;
  source: string;
  /** the environment its program runs with (the quick start reads the service's address and the license from it) */
  env?: Record<string, string>;
}

type ConsumerName = 'esm-node16' | 'esm-bundler' | 'cjs' | 'cjs-node10';

/** The domains of the README walk-through's license, whose host the quick start's origin is one of. */
const WALK_THROUGH_DOMAINS = ['*.ornek.com.tr'];

const STRICT = { target: 'ES2022', strict: true, noUncheckedIndexedAccess: true, outDir: 'out', rootDir: '.' };
// Checking @types/node's declarations costs some 8 s a compilation, so the two programs with
// Node's types skip the libraries' checks, as most projects do; the bundler one has no
// @types and checks the SDK's .d.ts (those of dist/cjs are the same text as dist/esm's).
const WITH_NODE_TYPES = { lib: ['ES2022'], types: ['node'], typeRoots: [NODE_TYPES], skipLibCheck: true };
const CHECKING_SDK_TYPES = { skipLibCheck: false, skipDefaultLibCheck: true };

/**
 * The body the generated programs run: quota before, two redemptions, a license token
 * (validateLicense) verified, quota after, and ./members' reading of a JSON text that names
 * a member twice (`members` the expression of that module).
 */
function flow(h: Harness, licenseKey: string, password: string, api: string, members: string): string {
  return `
  const base = ${JSON.stringify(h.url)};
  const licenseKey = ${JSON.stringify(licenseKey)};
  const password = ${JSON.stringify(password)};
  const api = new ${api}LicenseClient({ baseUrl: base, timeoutMs: 20_000, retry: { maxAttempts: 1 } });
  const before: ${api}QuotaInfo = (await api.checkQuota(licenseKey)).data;
  const pair: ${api}TokenPair = await api.getToken({ licenseKey, password, imzaTipi: 0 });
  const first = await api.validate({ token: pair.signToken }, { idempotencyKey: 'paket-1' });
  let refused = '';
  try {
    await api.validate({ token: pair.signToken });
  } catch (err) {
    if (err instanceof ${api}LicenseApiError) refused = err.code;
  }
  const more = await api.signToken(pair.accessToken, { imzaTipi: 1 });
  const second = await api.validate({ token: more.signToken });
  const { licenseToken }: ${api}LicenseTokenAnswer = await api.validateLicense({ licenseKey, password });
  const license: ${api}LicenseTokenClaims = await ${api}verifyLicenseToken(licenseToken, { keySet: new ${api}KeySet({ baseUrl: base }) });
  const after = (await api.checkQuota(licenseKey)).data;
  console.log(JSON.stringify({
    before: before.remainingQuota, first: first.remainingQuota, refused, second: second.remainingQuota,
    after: after.remainingQuota, used: after.usedQuota, license: { name: license.firma_adi, remaining: license.remaining_quota },
    twice: ${members}uniqueObjectOf('{"a":1,"a":2}'), once: ${members}uniqueObjectOf('{"a":1}'),
  }));`;
}

const CJS_MAIN = (body: string): string => `
async function main(): Promise<void> {${body}
  console.log(JSON.stringify({ entry: require.resolve('@license-service/client'), members: require.resolve('@license-service/client/members') }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
`;

async function consumers(root: string, h: Harness): Promise<Record<ConsumerName, Consumer>> {
  const [a, b, c, d] = [await h.createLicense({ totalQuota: 5, organizationName: 'Şifa Eczanesi', domains: WALK_THROUGH_DOMAINS, releasesPerDay: 1 }),
    await h.createLicense({ totalQuota: 4, organizationName: 'Tarayıcı Eczanesi' }),
    await h.createLicense({ totalQuota: 3, organizationName: 'Eski Eczane' }),
    await h.createLicense({ totalQuota: 4, organizationName: 'Köklü Eczane' })];
  const quick = await quickStart();
  return {
    'esm-node16': {
      dir: join(root, 'esm-node16'), type: 'module', source: quick,
      compilerOptions: { ...STRICT, ...WITH_NODE_TYPES, module: 'node16', moduleResolution: 'node16' },
      env: { LICENSE_SERVICE_URL: h.url, LICENSE_KEY: a.licenseKey, LICENSE_PASSWORD: a.password },
    },
    'esm-bundler': {
      dir: join(root, 'esm-bundler'), type: 'module',
      compilerOptions: { ...STRICT, ...CHECKING_SDK_TYPES, lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], module: 'esnext', moduleResolution: 'bundler' },
      source: `import { KeySet, LicenseApiError, LicenseClient, verifyLicenseToken } from '@license-service/client';
import type { LicenseTokenAnswer, LicenseTokenClaims, QuotaInfo, TokenPair } from '@license-service/client';
import { uniqueObjectOf } from '@license-service/client/members';
${flow(h, b.licenseKey, b.password, '', '')}
export {};
`,
    },
    cjs: {
      dir: join(root, 'cjs'), type: 'commonjs',
      compilerOptions: { ...STRICT, ...WITH_NODE_TYPES, module: 'node16', moduleResolution: 'node16' },
      source: `import sdk = require('@license-service/client');
import members = require('@license-service/client/members');
${CJS_MAIN(flow(h, c.licenseKey, c.password, 'sdk.', 'members.'))}`,
    },
    // node10 is deprecated by TypeScript 6, and still what many older projects compile with
    'cjs-node10': {
      dir: join(root, 'cjs-node10'), type: 'commonjs',
      compilerOptions: { ...STRICT, ...WITH_NODE_TYPES, module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0' },
      source: `import * as sdk from '@license-service/client';
import * as members from '@license-service/client/members';
${CJS_MAIN(flow(h, d.licenseKey, d.password, 'sdk.', 'members.'))}`,
    },
  };
}

const h = await startHarness(t, 'sdk-package', LIVE_COUNTS);
const root = await mkdtemp(join(tmpdir(), 'sdk-package-'));
t.teardown(() => rm(root, { recursive: true, force: true }));

// packs the build `npm run build` made (--ignore-scripts: prepack would rebuild it under
// the other test files that read it)
const packed = JSON.parse(await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root], PACKAGE_DIR)) as { filename: string }[];
const tarball = join(root, packed[0]?.filename ?? 'missing.tgz');

t.test('the tarball holds the SDK only: ES modules and CommonJS with their .d.ts, the README, package.json, the ./members stub', async (t) => {
  const listed = (await run('tar', ['-tzf', tarball], root)).split('\n').filter((line) => line !== '').sort();
  const expected = ['package/README.md', 'package/package.json', 'package/dist/cjs/package.json', 'package/members/package.json'];
  for (const kind of ['esm', 'cjs']) for (const m of MODULES) expected.push(`package/dist/${kind}/${m}.js`, `package/dist/${kind}/${m}.d.ts`);
  t.strictSame(listed, expected.sort());
  const manifest = JSON.parse(await run('tar', ['-xzOf', tarball, 'package/package.json'], root)) as Record<string, unknown>;
  t.match(manifest, { name: '@license-service/client', type: 'module', sideEffects: false, engines: { node: '>=20' } });
  t.notOk('dependencies' in manifest, 'no dependencies: fetch and WebCrypto are the platform\'s');
  t.equal(await run('tar', ['-xzOf', tarball, 'package/dist/cjs/package.json'], root), '{"type":"commonjs"}\n', 'dist/cjs is CommonJS');
  const unpacked = join(root, 'unpacked');
  await mkdir(unpacked);
  await run('tar', ['-xzf', tarball, '-C', unpacked], root);
  const differ = [];
  for (const m of MODULES) {
    const [esm, cjs] = await Promise.all(['esm', 'cjs'].map((kind) => readFile(join(unpacked, `package/dist/${kind}/${m}.d.ts`), 'utf8')));
    if (esm !== cjs) differ.push(m);
  }
  t.strictSame(differ, [], 'the declarations of both builds are the same text (the compilations below check one of them)');
});

t.test('arethetypeswrong (strict profile) and publint find no problem in the tarball', async (t) => {
  // attw exits 1 on any problem: its report is read either way, so that a failure says which
  let report: string;
  let exitCode = 0;
  try {
    report = (await exec(process.execPath, [ATTW, tarball, '--profile', 'strict', '--format', 'json', '--no-definitely-typed'],
      { cwd: root, env: cleanEnv(), timeout: 120_000, maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; code?: number };
    report = e.stdout ?? '';
    exitCode = e.code ?? -1;
  }
  const { analysis, problems } = JSON.parse(report) as {
    problems: unknown;
    analysis: { entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName?: string } }> }> };
  };
  t.strictSame(problems, {}, 'attw: no problem');
  t.equal(exitCode, 0, 'attw exits 0');
  // what a failing resolution would look like: no .d.ts for an entry point under a resolution
  const expected: Record<string, string> = { node10: 'cjs', 'node16-cjs': 'cjs', 'node16-esm': 'esm', bundler: 'esm' };
  for (const [entry, module] of [['.', 'index'], ['./members', 'members']] as const) {
    const resolved = Object.fromEntries(Object.entries(analysis.entrypoints[entry]?.resolutions ?? {})
      .map(([kind, r]) => [kind, r.resolution?.fileName?.replace(/^\/node_modules\/@license-service\/client\//, '') ?? null]));
    t.strictSame(resolved, Object.fromEntries(Object.entries(expected).map(([kind, build]) => [kind, `dist/${build}/${module}.d.ts`])),
      `${entry}: the types of its build under every resolution`);
  }

  const { publint } = await import('publint');
  const { formatMessage } = await import('publint/utils');
  const packed = await readFile(tarball);
  const linted = await publint({ pack: { tarball: packed.buffer.slice(packed.byteOffset, packed.byteOffset + packed.byteLength) }, level: 'warning' });
  t.strictSame(linted.messages.map((m) => `${m.type}: ${formatMessage(m, linted.pkg, { color: false }) ?? m.code}`), [], 'publint: no error, no warning');
});

t.test('installed from the tarball, compiled four ways, each program runs against the service', async (t) => {
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }));
  await run('npm', ['install', tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], root);
  const all = await consumers(root, h);
  for (const [name, c] of Object.entries(all)) {
    await mkdir(c.dir, { recursive: true });
    await writeFile(join(c.dir, 'package.json'), JSON.stringify({ private: true, type: c.type }));
    await writeFile(join(c.dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: c.compilerOptions, files: ['main.ts'] }));
    await writeFile(join(c.dir, 'main.ts'), c.source);
    const files = await compile(c.dir);
    const sdkTypes = files.split('\n').filter((f) => f.includes('node_modules/@license-service/client/'));
    const kind = c.type === 'commonjs' ? 'cjs' : 'esm';
    t.ok(sdkTypes.length > 0 && sdkTypes.every((f) => f.includes(`/dist/${kind}/`) && f.endsWith('.d.ts')), `${name}: compiled against dist/${kind}'s .d.ts`);
  }

  const esm = all['esm-node16'];
  const printed = await run(process.execPath, [join(esm.dir, 'out/main.js')], esm.dir, cleanEnv(esm.env));
  const lines = printed.trim().split('\n');
  t.match(lines, [
    'license of Şifa Eczanesi: 5 of 5 left',
    'validated: 4 left',
    'again: TOKEN_ALREADY_USED',
    'released: 5 left',
    /^receipt for 1 document\(s\): 4 left, digest [0-9a-f]{64}$/,
    'check-quota: 4 of 5 left (1 used)',
  ], 'esm-node16: the quick start of docs/sdk.md on a license with domains, one unit of quota per redemption, one back');
  t.equal(lines.length, 6);

  // the same text as a .mjs file, as the README walk-through runs it, on a license like the first but without releases
  const again = await h.createLicense({ totalQuota: 5, organizationName: 'Şifa Eczanesi', domains: WALK_THROUGH_DOMAINS });
  await writeFile(join(esm.dir, 'quickstart.mjs'), await quickStart());
  const plain = await run(process.execPath, [join(esm.dir, 'quickstart.mjs')], esm.dir,
    cleanEnv({ ...esm.env, LICENSE_KEY: again.licenseKey, LICENSE_PASSWORD: again.password }));
  t.match(plain.trim().split('\n'), [
    'license of Şifa Eczanesi: 5 of 5 left', 'validated: 4 left', 'again: TOKEN_ALREADY_USED', 'released: no, the license allows no releases',
    /^receipt for 1 document\(s\): 3 left, digest [0-9a-f]{64}$/, 'check-quota: 3 of 5 left (2 used)',
  ], 'the quick start as plain JavaScript, on a license that allows no releases');

  const members = { twice: null, once: { a: 1 } };
  const bundled = JSON.parse(await run(process.execPath, [join(all['esm-bundler'].dir, 'out/main.js')], root)) as unknown;
  t.strictSame(bundled, {
    before: 4, first: 3, refused: 'TOKEN_ALREADY_USED', second: 2, after: 2, used: 2, license: { name: 'Tarayıcı Eczanesi', remaining: 2 }, ...members,
  }, 'esm-bundler: remaining down by one per redemption');

  for (const [name, lic] of [['cjs', { before: 3, name: 'Eski Eczane' }], ['cjs-node10', { before: 4, name: 'Köklü Eczane' }]] as const) {
    const dir = all[name].dir;
    const [figures, entry] = (await run(process.execPath, [join(dir, 'out/main.js')], dir)).trim().split('\n').map((l) => JSON.parse(l) as unknown);
    const after = lic.before - 2;
    t.strictSame(figures, {
      before: lic.before, first: lic.before - 1, refused: 'TOKEN_ALREADY_USED', second: after, after, used: 2, license: { name: lic.name, remaining: after }, ...members,
    }, `${name}: the same through require()`);
    t.match(entry, {
      entry: /\/node_modules\/@license-service\/client\/dist\/cjs\/index\.js$/, members: /\/node_modules\/@license-service\/client\/dist\/cjs\/members\.js$/,
    }, `${name}: require() loaded the CommonJS build`);
  }
});
