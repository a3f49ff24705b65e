import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Turns the newest .cpuprofile in a folder (node --cpu-prof) into a flame graph: folded
// stacks (name;name;name count, the format flamegraph.pl and speedscope read), an SVG to
// open in a browser, and the top functions by self time on stdout.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Frame {
  name: string;
  self: number;
  total: number;
  children: Frame[];
}

const dir = process.argv[2] ?? 'bench/profiles';
const out = process.argv[3] ?? 'validate';
// the server's child processes (the password hasher) write profiles too: take the busiest
const busy = (p: { nodes: ProfileNode[] }) => p.nodes.reduce((s, n) => s + (n.callFrame.functionName === '(idle)' ? 0 : n.hitCount ?? 0), 0);
const candidates = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => ({ file: f, profile: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { nodes: ProfileNode[] } }))
  .sort((a, b) => busy(b.profile) - busy(a.profile));
if (candidates.length === 0) throw new Error(`no .cpuprofile in ${dir}`);
const { file, profile } = candidates[0] as (typeof candidates)[number];
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

// The server and the worker run as bundles (scripts/bundle.mjs): a frame in one is named
// by the module and line its source map gives, as it was before they were bundled.
const maps = new Map<string, SourceMap | null>();
function mapOf(url: string): SourceMap | null {
  let map = maps.get(url);
  if (map === undefined) {
    const file = url.startsWith('file://') ? `${fileURLToPath(url)}.map` : '';
    map = file !== '' && existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : null;
    maps.set(url, map);
  }
  return map;
}

function label(n: ProfileNode): string {
  const { functionName, lineNumber, columnNumber } = n.callFrame;
  let { url } = n.callFrame;
  let line = lineNumber;
  const entry: { originalSource?: string; originalLine?: number } | undefined = url === '' ? undefined : mapOf(url)?.findEntry(lineNumber, columnNumber);
  if (entry?.originalSource !== undefined && entry.originalLine !== undefined) {
    url = entry.originalSource;
    line = entry.originalLine;
  }
  const where = url === '' ? '' : ` ${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, '').replace(/^(\.\.\/)+/, '')}:${line + 1}`;
  return `${functionName || '(anonymous)'}${where}`.replace(/;/g, ',');
}

// idle time (waiting between runs, and for I/O) is left out: shares are of busy time
function build(n: ProfileNode): Frame {
  const children = (n.children ?? []).map((id) => build(byId.get(id) as ProfileNode)).filter((c) => c.name !== '(idle)');
  const self = n.hitCount ?? 0;
  return { name: label(n), self, total: self + children.reduce((s, c) => s + c.total, 0), children };
}
const root = build(profile.nodes[0] as ProfileNode);

const folded: string[] = [];
const selfByName = new Map<string, number>();
(function fold(f: Frame, stack: string[]) {
  const here = [...stack, f.name];
  if (f.self > 0) {
    folded.push(`${here.join(';')} ${f.self}`);
    selfByName.set(f.name, (selfByName.get(f.name) ?? 0) + f.self);
  }
  for (const c of f.children) fold(c, here);
})(root, []);
writeFileSync(path.join(dir, `${out}.folded`), folded.join('\n') + '\n');

// SVG: one row per stack depth, root at the bottom, width in proportion to total samples
const WIDTH = 1600;
const ROW = 17;
// module loading at start makes stacks 140 deep; the request path is far shallower
const MAX_DEPTH = 40;
const depthOf = (f: Frame): number => 1 + Math.max(0, ...f.children.map(depthOf));
const depth = Math.min(MAX_DEPTH, depthOf(root));
const rects: string[] = [];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
(function draw(f: Frame, x: number, level: number) {
  const w = (f.total / root.total) * WIDTH;
  if (w < 0.5 || level >= MAX_DEPTH) return;
  const y = (depth - level - 1) * ROW;
  const pct = ((f.total / root.total) * 100).toFixed(2);
  const hue = f.name.startsWith('(') ? 0 : 20 + (f.name.length * 7) % 40;
  const text = w > 40 ? esc(f.name.slice(0, Math.floor(w / 7))) : '';
  rects.push(`<g><title>${esc(f.name)} (${pct} %, self ${((f.self / root.total) * 100).toFixed(2)} %)</title>` +
    `<rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${ROW - 1}" fill="hsl(${hue},85%,60%)"/>` +
    `<text x="${(x + 3).toFixed(1)}" y="${y + 12}">${text}</text></g>`);
  let cx = x;
  for (const c of f.children) {
    draw(c, cx, level + 1);
    cx += (c.total / root.total) * WIDTH;
  }
})(root, 0, 0);
writeFileSync(path.join(dir, `${out}.svg`),
  `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${depth * ROW}" font-family="monospace" font-size="11">\n` +
  `${rects.join('\n')}\n</svg>\n`);

const top = [...selfByName].sort((a, b) => b[1] - a[1]).slice(0, 25);
process.stdout.write(`${file}: ${root.total} busy samples; self time as a share of busy time, top 25\n`);
for (const [name, n] of top) process.stdout.write(`${((n / root.total) * 100).toFixed(1).padStart(5)} %  ${name}\n`);
process.stdout.write(`wrote ${path.join(dir, `${out}.folded`)} and ${path.join(dir, `${out}.svg`)}\n`);
