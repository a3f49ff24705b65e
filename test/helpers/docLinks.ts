import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

// The checks that keep the documentation whole: links that resolve (files and heading
// anchors as GitHub derives them), mentions of docs/<name>.md anywhere in the tree, and no
// pointer to something a reader of the repository does not have (an issue number, a file
// outside the repository).

/** The anchor GitHub gives a heading: lower case, punctuation removed, spaces to '-'. */
export function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The text of a Markdown file without its fenced code blocks (their lines become empty). */
export function withoutFences(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const opening = /^\s*(```+|~~~+)/.exec(line);
    if (fence === null && opening) { fence = opening[1]!.slice(0, 3); return ''; }
    if (fence !== null) { if (line.trimStart().startsWith(fence)) fence = null; return ''; }
    return line;
  });
}

/** Every anchor a Markdown file has: its headings' slugs, repeated ones numbered as GitHub numbers them. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = slugOf(heading[1]!.replace(/`/g, ''));
    const n = seen.get(slug) ?? 0;
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
    seen.set(slug, n + 1);
  }
  return anchors;
}

/** The targets of a Markdown file's links that stay in the repository (`file#anchor`, `#anchor`), outside code. */
export function relativeLinksOf(markdown: string): string[] {
  const links: string[] = [];
  for (const line of withoutFences(markdown)) {
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^()\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      links.push(target);
    }
  }
  return links;
}

/** Why `target` (a link of `fromFile`, or a root-relative path with `fromFile` null) does not resolve; null when it does. */
export function brokenLink(root: string, fromFile: string | null, target: string): string | null {
  const [pathPart = '', anchor] = target.split('#', 2);
  const base = fromFile === null ? root : dirname(join(root, fromFile));
  const file = pathPart === '' && fromFile !== null ? join(root, fromFile) : normalize(join(base, decodeURIComponent(pathPart)));
  const shown = relative(root, file) || '.';
  if (shown.startsWith('..')) return `${target}: outside the repository`;
  if (!existsSync(file)) return `${target}: no file ${shown}`;
  if (anchor === undefined || anchor === '') return null;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `${target}: an anchor into ${shown}, which is no Markdown file`;
  return anchorsOf(readFileSync(file, 'utf8')).has(anchor) ? null : `${target}: no heading #${anchor} in ${shown}`;
}

/** Every mention of docs/<name>.md (optionally #anchor) in a text, as a root-relative target. */
export function docMentionsOf(text: string): string[] {
  return [...text.matchAll(/(?<![\w./-])docs\/[\w.-]+\.md(?:#[\p{L}\p{N}_-]+)?/gu)].map((m) => m[0]);
}

/** References to an issue tracker ("issue 25", "issues #3", "#25" in prose); "PKCS#8" and colours are not. */
const ISSUE_REFERENCES: RegExp[] = [
  /\b(?:issues?|pull requests?|PRs?)\s+#?\d+\b/i,
  /(?:^|[\s([])#\d{1,4}\b(?![\w-])/,
];

/** Files a reader of the repository does not have: the developers' shared folder and its documents. */
const OUTSIDE_PATHS: RegExp[] = [
  /\.\.\/shared\b/,
  /\bspec\.md\b/i,
  /\b(?:CONTRACT|DESIGN|STYLE)\.md\b/,
];

/** The issue references and outside paths in a text, each as "line N: match". */
export function forbiddenReferencesIn(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const pattern of [...ISSUE_REFERENCES, ...OUTSIDE_PATHS]) {
      const m = pattern.exec(line);
      if (m) found.push(`line ${i + 1}: ${m[0].trim()}`);
    }
  });
  return found;
}

/** The tracked files of the repository, root-relative. */
export function trackedFiles(root: string): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter((f) => f !== '');
}

/** Whether a file reads as text (no NUL in its first 8 KiB). */
export function isText(root: string, file: string): boolean {
  const path = join(root, file);
  if (!existsSync(path)) return false; // deleted in the working tree, not yet committed
  const head = readFileSync(path).subarray(0, 8192);
  return !head.includes(0);
}
