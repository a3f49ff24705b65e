import { fileURLToPath } from 'node:url';
import path from 'node:path';

// Compiled files live in dist/src/..., sources in src/...; both sit two levels below the root.
const here = path.dirname(fileURLToPath(import.meta.url));
export const projectRoot = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');
export const luaDir = path.join(projectRoot, 'lua');
export const sqlDir = path.join(projectRoot, 'sql');
