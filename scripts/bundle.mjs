// The programs that start with every deployment, the server (npm start) and the usage
// worker, as one file each, written over tsc's entry modules in dist/src/cli (run by
// `npm run build`, after tsc has type-checked and compiled everything).
//
// Why: a process that loads ~350 ES modules one by one spends about half a second of CPU
// resolving, reading and linking them before it serves; one bundled file halves that. The
// other programs (licensectl, the hasher, the operator commands) start light and stay as
// tsc wrote them, and the tests import tsc's modules as before.
//
// What stays outside the bundle: the native addons, loaded from node_modules as before.
// A bundle lives where tsc put its entry, so every path its code finds relative to itself
// (the hasher beside it, lua/ and sql/ above it, node_modules) is the same.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/server.ts', 'src/cli/worker.ts'],
  outdir: 'dist/src/cli',
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  tsconfig: 'tsconfig.json',
  sourcemap: true,
  external: ['uWebSockets.js', 'argon2', 'sodium-native'],
  // the CommonJS dependencies (ioredis, ajv, pino...) call require(), which an ES module lacks
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
});
