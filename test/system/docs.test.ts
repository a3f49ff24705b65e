import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import {
  anchorsOf, brokenLink, docMentionsOf, forbiddenReferencesIn, isText, relativeLinksOf, slugOf, trackedFiles,
} from '../helpers/docLinks.js';

// The documentation holds together, as a reader on GitHub follows it: every relative link
// and every mention of docs/<name>.md in the tree leads to a file and a heading that exist;
// the README stays short, with a table of contents and a link to every document; and
// nothing names an issue or a file outside the repository. No service is needed.

const root = fileURLToPath(new URL('../../..', import.meta.url)); // dist/test/system -> the checkout
const tracked = trackedFiles(root);
const read = (file: string): string => readFileSync(`${root}/${file}`, 'utf8');
const THIS_TEST = ['test/system/docs.test.ts', 'test/helpers/docLinks.ts'];
const markdown = tracked.filter((f) => f.endsWith('.md') && isText(root, f));
const docs = readdirSync(`${root}/docs`).filter((f) => f.endsWith('.md')).sort();

t.test('the slugger derives anchors as GitHub does', async (t) => {
  t.equal(slugOf('Walk-through with curl'), 'walk-through-with-curl');
  t.equal(slugOf('Admin CLI (licensectl)'), 'admin-cli-licensectl');
  t.equal(slugOf('Eviction: `maxmemory-policy noeviction`'), 'eviction-maxmemory-policy-noeviction');
  t.equal(slugOf('Needed for 10 k, 100 k and 1 M validations per second'), 'needed-for-10-k-100-k-and-1-m-validations-per-second');
  t.equal(slugOf('WORKERS=1 against WORKERS_2'), 'workers1-against-workers_2');
  t.equal(slugOf('Redis Cluster: slots moving'), 'redis-cluster-slots-moving');
  t.equal(slugOf('Kotası doldu (429)'), 'kotası-doldu-429');
  t.same([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n### B!')], ['a', 'a-1', 'b'], 'repeated headings numbered, code ignored');
});

t.test('the link checker finds what is broken', async (t) => {
  t.same(relativeLinksOf('[a](docs/api.md#x) [b](https://x.org) `[c](nope.md)` [d](#here)'), ['docs/api.md#x', '#here']);
  t.match(brokenLink(root, 'README.md', 'docs/no-such-file.md'), /no file/);
  t.match(brokenLink(root, 'README.md', 'docs/api.md#no-such-heading'), /no heading/);
  t.match(brokenLink(root, 'docs/api.md', '../../elsewhere.md'), /outside the repository/);
  t.equal(brokenLink(root, 'docs/api.md', 'operations.md'), null, 'relative to the linking file');
  t.same(docMentionsOf('see docs/api.md#cors, (docs/operations.md) and bench/README.md'), ['docs/api.md#cors', 'docs/operations.md']);
});

t.test('the reference checker flags issues and outside paths, and nothing else', async (t) => {
  const bad = ['fixed in issue 25', 'see Issue #7', '(#25)', 'as asked in #3.', 'PR 12 did it',
    'read ../shared/notes', 'the spec.md table', 'CONTRACT.md says', 'per DESIGN.md', 'STYLE.md'];
  for (const text of bad) t.not(forbiddenReferencesIn(text).length, 0, `flags: ${text}`);
  const good = ['a PKCS#8 key', 'color: #fff', 'fill="#333"', '# 1. create a license', 'issue.lua issues tokens',
    'get-token issues a token', 'the published spec of OpenAPI', 'docs/api.md', 'a#1 b', 'anchor [x](#3-steps)'];
  for (const text of good) t.same(forbiddenReferencesIn(text), [], `passes: ${text}`);
});

t.test('every relative link of every Markdown file resolves', async (t) => {
  t.ok(markdown.includes('README.md') && markdown.includes('bench/README.md'), 'the Markdown files are found');
  for (const file of markdown) {
    const broken = relativeLinksOf(read(file)).map((target) => brokenLink(root, file, target)).filter((b) => b !== null);
    t.same(broken, [], `${file}: every link resolves`);
  }
});

t.test('every mention of docs/<name>.md in the tree resolves', async (t) => {
  let mentions = 0;
  for (const file of tracked.filter((f) => !THIS_TEST.includes(f) && isText(root, f))) {
    const broken = docMentionsOf(read(file)).map((target) => { mentions++; return brokenLink(root, null, target); }).filter((b) => b !== null);
    t.same(broken, [], `${file}: every docs/ mention resolves`);
  }
  t.ok(mentions > 20, `mentions are found (${mentions})`);
});

t.test('the README is short, has a table of contents, and links every document', async (t) => {
  const readme = read('README.md');
  const lines = readme.split('\n').length;
  t.ok(lines <= 260, `README.md has ${lines} lines (at most 260)`);
  const toc = /^## Contents\n([\s\S]*?)\n## /m.exec(readme);
  t.ok(toc, 'a "Contents" section');
  const tocLinks = relativeLinksOf(toc?.[1] ?? '');
  t.ok(tocLinks.length >= 5, `the contents list its sections (${tocLinks.length} links)`);
  for (const target of tocLinks) t.equal(brokenLink(root, 'README.md', target), null, `contents link ${target}`);
  const linked = new Set(relativeLinksOf(readme).map((l) => l.split('#')[0]));
  for (const doc of docs) t.ok(linked.has(`docs/${doc}`), `README links docs/${doc}`);
});

t.test('bench/README.md holds the latest figures, not a log of every run', async (t) => {
  // earlier runs belong in git history (git log -p bench/README.md), not in the file
  const lines = read('bench/README.md').replace(/\n$/, '').split('\n').length;
  t.ok(lines <= 320, `bench/README.md has ${lines} lines (at most 320)`);
});

t.test('nothing suggests bare npx licensectl, which outside the checkout runs whatever the registry has of that name', async (t) => {
  // the one mention allowed is docs/cli.md's warning against it
  const bare = /npx\s+(?:--?[\w-]+(?:=\S+)?\s+)*licensectl/g;
  for (const file of tracked.filter((f) => f !== 'package-lock.json' && !THIS_TEST.includes(f) && isText(root, f))) {
    const text = read(file);
    const found = [...text.matchAll(bare)].filter((m) => !(file === 'docs/cli.md' && text.slice(Math.max(0, m.index - 7), m.index) === 'Never `'));
    t.same(found.map((m) => m[0]), [], `${file}: no bare npx licensectl`);
  }
  t.match(read('docs/cli.md'), 'Never `npx licensectl`', 'docs/cli.md says why not');
});

t.test('docs/architecture.md names every test file, so its list cannot fall behind', async (t) => {
  const text = read('docs/architecture.md');
  const tests = text.slice(text.indexOf('## Tests'));
  // a name in backticks (test/<folder>/ before it or not): the file's name, or a route's set of files (<route>.happy, .error, .security) by the route's
  const named = new Set([...tests.matchAll(/`(?:test\/[a-z]+\/)?([A-Za-z0-9_.-]+)`/g)].map((m) => m[1] as string));
  const files = tracked.filter((f) => /^test\/.+\.test\.ts$/.test(f));
  t.ok(files.length > 100, `the test files are found (${files.length})`);
  for (const file of files) {
    const stem = (file.split('/').pop() as string).replace(/\.test\.ts$/, '');
    const route = stem.replace(/\.(happy|error|security)$/, '');
    t.ok(named.has(stem) || named.has(route), `docs/architecture.md#tests names ${file} (\`${stem}\`${route !== stem ? ` or \`${route}\`` : ''})`);
  }
});

t.test('no tracked file names an issue or a file outside the repository', async (t) => {
  for (const file of tracked.filter((f) => f !== 'package-lock.json' && !THIS_TEST.includes(f) && isText(root, f))) {
    t.same(forbiddenReferencesIn(read(file)), [], `${file}: no issue reference, no outside path`);
  }
});
