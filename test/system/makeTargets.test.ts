import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { projectRoot } from '../../src/paths.js';

// The Makefile's build, on a clone of this checkout (its committed HEAD, with the working
// tree's Makefile and scripts/ over it; node_modules linked, never installed): one build,
// then nothing left to rebuild; a build for `make run` or `make bench` deletes and rewrites
// nothing of dist/test, and waits while a test run reads dist/; a compiled test whose source
// is gone from test/ is removed by `make test`'s pre-step (prune-tests), and only it.
// What is tested is the logic around the compiler (the stamp, the lock, the pruning): the
// clone's `npm run build` copies this checkout's compiled files of the clone's sources
// instead of running tsc again, which every `make test` has just run (a full tsc was most
// of this file's time on a 2-core machine).

t.setTimeout(600_000); // on a machine that may be running other tests

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'make-targets-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const co = path.join(dir, 'checkout');

// a make of its own, not a sub-make of the `make test` that may be running this
const env = { ...process.env };
for (const name of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete env[name];
/** make in the clone; node_modules/.installed counts as up to date (-o): dependencies are the repository's own. */
const make = (...args: string[]) => run('make', ['--no-print-directory', '-o', 'node_modules/.installed', ...args], { cwd: co, env });
/** make's exit code (make -q: 0 up to date, 1 something to rebuild). */
const makeStatus = (...args: string[]) => make(...args).then(() => 0, (err: { code?: number }) => err.code ?? -1);

await run('git', ['clone', '-q', projectRoot, co]);
for (const item of ['Makefile', 'scripts']) cpSync(path.join(projectRoot, item), path.join(co, item), { recursive: true });
symlinkSync(path.join(projectRoot, 'node_modules'), path.join(co, 'node_modules'));

// the clone's build: for each source of src/, test/ and bench/, this checkout's .js and .js.map
const COPY_BUILD = `import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
const [from, to] = process.argv.slice(2);
let copied = 0;
const walk = (rel) => {
  for (const e of readdirSync(path.join(to, rel), { withFileTypes: true })) {
    const r = path.join(rel, e.name);
    if (e.isDirectory()) { walk(r); continue; }
    if (!e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
    for (const out of [r.slice(0, -3) + '.js', r.slice(0, -3) + '.js.map']) {
      if (!existsSync(path.join(from, 'dist', out))) continue;
      mkdirSync(path.dirname(path.join(to, 'dist', out)), { recursive: true });
      copyFileSync(path.join(from, 'dist', out), path.join(to, 'dist', out));
      copied++;
    }
  }
};
for (const top of ['src', 'test', 'bench']) walk(top);
console.log('build: copied ' + copied + ' compiled files');
`;
writeFileSync(path.join(dir, 'copy-build.mjs'), COPY_BUILD);
const manifest = JSON.parse(readFileSync(path.join(co, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
manifest.scripts.build = `node ${JSON.stringify(path.join(dir, 'copy-build.mjs'))} ${JSON.stringify(projectRoot)} .`;
writeFileSync(path.join(co, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

/** Every file under dist/test with its inode and mtime: what a running test could be reading. */
function snapshot(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(co, p), `${statSync(p).ino}:${statSync(p).mtimeMs}`);
    }
  };
  walk(path.join(co, 'dist', 'test'));
  return out;
}

t.test('one build, then nothing to rebuild', async (t) => {
  const first = await make('build');
  t.match(first.stdout, /build: copied [1-9]\d* compiled files/, 'the build ran');
  t.ok(existsSync(path.join(co, 'dist', '.built')), 'its stamp is written');
  t.ok(existsSync(path.join(co, 'dist', 'test', 'routes', 'root.happy.test.js')), 'the tests are compiled');
  t.equal(await makeStatus('-q', 'dist/.built'), 0, 'make -q: the stamp is up to date');
  const again = await make('-n', 'build');
  t.notMatch(again.stdout, /build\.sh|npm run build|tsc/, `make -n build runs nothing (${again.stdout.trim()})`);
});

t.test('a build for run or bench leaves dist/test alone', async (t) => {
  const before = snapshot();
  t.ok(before.size > 100, `${before.size} compiled test files`);
  await make('build');
  t.same(snapshot(), before, 'nothing up to date is rebuilt: every file of dist/test as it was (inode and mtime)');
  for (const target of ['run', 'bench', 'bench-sign']) {
    const plan = await make('-n', target);
    t.notMatch(plan.stdout, /rm -rf|build\.sh|npm run build/, `make -n ${target}: no build, nothing deleted`);
  }
});

t.test('make test\'s pre-step removes the compiled tests whose source is gone, and only those', async (t) => {
  const gone = path.join('test', 'routes', 'health.happy.test');
  rmSync(path.join(co, `${gone}.ts`));
  const before = snapshot();
  const out = await make('prune-tests');
  t.match(out.stdout, /removed dist\/test\/routes\/health\.happy\.test\.js/, 'it says what it removed');
  t.notOk(existsSync(path.join(co, 'dist', `${gone}.js`)), 'its compiled test is gone');
  t.notOk(existsSync(path.join(co, 'dist', `${gone}.js.map`)), 'and its source map');
  const expected = new Map([...before].filter(([file]) => !file.startsWith(path.join('dist', gone))));
  t.same(snapshot(), expected, 'every other file as it was');
  t.equal(await makeStatus('-q', 'dist/.built'), 1, 'a deleted source leaves the stamp stale (its folder changed)');
});

t.test('a build waits while a test run reads dist/, and writes nothing meanwhile', async (t) => {
  const before = snapshot();
  // a source changed: the next make builds
  const now = new Date();
  utimesSync(path.join(co, 'src', 'paths.ts'), now, now);
  t.equal(await makeStatus('-q', 'dist/.built'), 1, 'a source newer than the stamp: something to rebuild');
  const reader = spawn('scripts/build.sh', ['--reading', 'sleep', '60'], { cwd: co, env, detached: true, stdio: 'ignore' });
  const lockFile = path.join(co, 'dist', '.build.lock');
  const readerHolds = () => run('flock', ['-n', '-x', lockFile, 'true']).then(() => false, () => true);
  for (let i = 0; i < 100 && !(await readerHolds()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  t.ok(await readerHolds(), 'the test run holds the lock');
  const builder = spawn('make', ['--no-print-directory', '-o', 'node_modules/.installed', 'build'], { cwd: co, env, detached: true });
  let said = '';
  builder.stdout.on('data', (c: Buffer) => { said += c.toString(); });
  builder.stderr.on('data', (c: Buffer) => { said += c.toString(); });
  const ended = new Promise((resolve) => builder.once('exit', resolve));
  try {
    const early = await Promise.race([ended.then(() => 'ended'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 4000))]);
    t.equal(early, 'waiting', 'the build has not run after 4 s');
    t.match(said, /waiting for dist\//, `and says why (${said.trim()})`);
    t.same(snapshot(), before, 'dist/test untouched');
  } finally {
    for (const child of [builder, reader]) {
      try {
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await ended;
  }
});
