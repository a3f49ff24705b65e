import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The project root: the nearest folder above this module that holds lua/ and sql/ (sources or any build folder). */
function findRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'lua')) && existsSync(path.join(dir, 'sql'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`lua/ and sql/ not found above ${start}`);
  }
}

export const projectRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));
export const luaDir = path.join(projectRoot, 'lua');
export const sqlDir = path.join(projectRoot, 'sql');
