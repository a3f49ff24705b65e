// The reference page of a document (/docs, /admin/docs), built once at start from the built
// document: its conventions, then every operation by group with its method, path and summary,
// each a link to the operation in Swagger UI (docs/interactive#/<tag>/<operationId>, Swagger
// UI's deep link, which opens it). Plain HTML and one style sheet, no script: what a reader
// and a slow phone load first; Swagger UI's script loads only when the reader asks for it
// (src/openapi/viewer.ts says why).

interface Operation {
  operationId: string;
  summary: string;
  tags: string[];
}

interface DocumentShape {
  info: { title: string; version: string; description: string };
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
}

export interface ReferenceOptions {
  /** from the page to the folder that holds docs/ ('' on /docs, '../' on /admin/docs) */
  root: string;
  /** other pages to point to: their relative link and their text */
  see?: { href: string; text: string }[];
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** The description's Markdown as far as it goes: paragraphs, "- " lists, `code`. */
function markdown(text: string): string {
  const inline = (line: string): string => escape(line).replace(/`([^`]+)`/g, '<code>$1</code>');
  const out: string[] = [];
  let list = false;
  for (const line of text.split('\n')) {
    const item = line.startsWith('- ');
    if (item && !list) out.push('<ul>');
    if (!item && list) out.push('</ul>');
    list = item;
    if (item) out.push(`<li>${inline(line.slice(2))}</li>`);
    else if (line.trim() !== '') out.push(`<p>${inline(line)}</p>`);
  }
  if (list) out.push('</ul>');
  return out.join('\n');
}

export function referencePage(document: Record<string, unknown>, options: ReferenceOptions): string {
  const doc = document as unknown as DocumentShape;
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));
  const groups = doc.tags.map((tag) => ({ tag, ops: operations.filter((o) => o.op.tags[0] === tag.name) })).filter((g) => g.ops.length > 0);
  const link = (tag: string, id: string): string => `docs/interactive#/${encodeURIComponent(tag)}/${encodeURIComponent(id)}`;
  const sections = groups.map(({ tag, ops }) => `<section aria-labelledby="group-${escape(tag.name)}">
<h2 id="group-${escape(tag.name)}">${escape(tag.name)}</h2>
<p>${escape(tag.description)}</p>
<ul class="operations">
${ops.map(({ path, method, op }) => `<li><a href="${escape(link(tag.name, op.operationId))}"><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></a> <span class="summary">${escape(op.summary)}</span></li>`).join('\n')}
</ul>
</section>`);
  const see = (options.see ?? []).map((s) => ` · <a href="${escape(s.href)}">${escape(s.text)}</a>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(doc.info.title)}: API reference</title>
<link rel="stylesheet" href="${options.root}docs/reference.css">
<link rel="icon" type="image/png" href="${options.root}docs/favicon-32x32.png">
</head>
<body>
<header>
<h1>${escape(doc.info.title)}</h1>
<p class="version">Version ${escape(doc.info.version)} · <a href="openapi.json">OpenAPI 3.1 document (JSON)</a>${see}</p>
</header>
<main>
<p class="lead">${operations.length} operations by group. Each leads to its parameters, answers and examples in the <a href="docs/interactive">interactive documentation</a> (Swagger UI), where "Try it out" calls this service.</p>
<nav aria-label="Groups">
<ul>
${groups.map(({ tag, ops }) => `<li><a href="#group-${escape(tag.name)}">${escape(tag.name)}</a> (${ops.length})</li>`).join('\n')}
</ul>
</nav>
${sections.join('\n')}
<section aria-labelledby="conventions">
<h2 id="conventions">Conventions</h2>
${markdown(doc.info.description)}
</section>
</main>
</body>
</html>
`;
}
