import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The layers of docs/architecture.md#layout hold where the compiler would not notice them
// broken: the routes build on everything below them (src/openapi, src/http, src/licenses...),
// so nothing below imports a route. Only the composition roots that register the routes
// do: src/service.ts (the service) and src/cli/ (the entry points; npm run openapi builds
// the routes to read their document). No service is needed: this reads the sources.

const root = fileURLToPath(new URL('../../..', import.meta.url)); // dist/test/system -> the checkout
const ROUTES = 'src/routes/';
const COMPOSITION_ROOTS = ['src/service.ts', 'src/cli/'];

function sourcesBelow(folder: string): string[] {
  return readdirSync(path.join(root, folder), { withFileTypes: true }).flatMap((e) => {
    const file = `${folder}/${e.name}`;
    if (e.isDirectory()) return sourcesBelow(file);
    return /\.(ts|js)$/.test(e.name) ? [file] : [];
  });
}

/** Where each relative import of a source file leads, from the checkout: static, re-exports, type-only and dynamic alike. */
function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/\bfrom\s+['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => (m[1] ?? m[2]) as string);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => path.posix.join(path.posix.dirname(file), s));
}

/** The imports of a file outside the routes and the composition roots that reach into src/routes/. */
function routeImportsOf(file: string, text: string): string[] {
  if (file.startsWith(ROUTES) || COMPOSITION_ROOTS.some((r) => file === r || (r.endsWith('/') && file.startsWith(r)))) return [];
  return importsOf(file, text).filter((target) => target.startsWith(ROUTES));
}

t.test('the check finds an import of a route in every form, and nothing else', async (t) => {
  const text = [
    "import type { RouteContext } from '../routes/context.js';",
    "import {\n  serviceRoutes,\n} from '../routes/index.js';",
    "export { codedErrors } from '../routes/replies.js';",
    "const m = await import('../routes/offline.js');",
    "import '../routes/schemas.js';",
    '// its reply table (src/routes/replies.ts), as the routes word it',
    "import { reply } from '../http/reply.js';",
    "import { RoutesLike } from './routes/x.js';", // src/openapi/routes/: not the routes
  ].join('\n');
  t.same(routeImportsOf('src/openapi/transport.ts', text),
    ['src/routes/context.js', 'src/routes/index.js', 'src/routes/replies.js', 'src/routes/offline.js', 'src/routes/schemas.js']);
  t.same(routeImportsOf('src/http/deep/file.ts', "import { x } from '../../routes/x.js';"), ['src/routes/x.js'], 'from a folder further down');
  t.same(routeImportsOf('src/routes/admin/docs.ts', "import { x } from '../docs.js';"), [], 'a route importing a route');
  t.same(routeImportsOf('src/service.ts', "import { serviceRoutes } from './routes/index.js';"), [], 'the service wires the routes');
  t.same(routeImportsOf('src/cli/openapi.ts', "import { offlineDocument } from '../routes/offline.js';"), [], 'an entry point');
});

t.test('nothing outside src/routes/ but the composition roots imports a route', async (t) => {
  const files = sourcesBelow('src');
  t.ok(files.length > 100 && files.includes('src/openapi/document.ts'), `the sources are found (${files.length})`);
  for (const file of files) {
    t.same(routeImportsOf(file, readFileSync(path.join(root, file), 'utf8')), [], `${file} imports nothing from ${ROUTES}`);
  }
});
