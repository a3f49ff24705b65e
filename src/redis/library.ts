import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { mastersOf } from './masters.js';
import { includeSource, scriptSource } from './scriptSource.js';
import { SCRIPT_NAMES, type ScriptClient, type ScriptName } from './scriptCall.js';

// The scripts reach Redis as one function library (FUNCTION LOAD, FCALL; Redis 7.0 or later)
// rather than as EVALSHA scripts, for one reason: a library's top-level locals last between
// calls, so lua/includes/server.lua reads the run id of the process it runs on once, not with
// an INFO on every call of the request path (measured in bench/README.md). The library and
// its functions are named after a hash of their text, so two versions of the service on one
// Redis (a rolling upgrade) each call their own.

/** Scripts that only read: they run while Redis is out of memory, as reads do. */
const READ_ONLY: ReadonlySet<ScriptName> = new Set(['peek', 'here']);

interface Library {
  name: string;
  source: string;
  functions: Record<ScriptName, string>;
}

let built: Library | undefined;

/** The library's text: server.lua once at the top (its run id shared), then one function per script. */
export function library(): Library {
  if (built) return built;
  const bodies = SCRIPT_NAMES.map((name) => [name, scriptSource(name, { withServer: false })] as const);
  const server = includeSource('server');
  const hash = createHash('sha1').update(server).update(bodies.map(([n, b]) => `${n}\n${b}`).join('\n')).digest('hex').slice(0, 12);
  const functions = Object.fromEntries(SCRIPT_NAMES.map((name) => [name, `license_${name}_${hash}`])) as Record<ScriptName, string>;
  const registered = bodies.map(([name, body]) =>
    `redis.register_function{function_name='${functions[name]}', flags={${READ_ONLY.has(name) ? "'no-writes'" : ''}}, callback=function(KEYS, ARGV)\n${body}\nend}`);
  built = { name: `license_${hash}`, source: [`#!lua name=license_${hash}`, server, ...registered].join('\n'), functions };
  return built;
}

/** The function a script is, for a raw FCALL (in a pipeline, or where the caller handles isMissingFunction). */
export function functionOf(name: ScriptName): string {
  return library().functions[name];
}

/** Redis's answer to an FCALL of a function it does not hold (a restart without persistence, a FUNCTION FLUSH, a new Cluster master): nothing ran. */
export function isMissingFunction(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('ERR Function not found');
}

/** Whether one Redis server holds this version's library (FUNCTION LIST). */
export async function holdsLibrary(node: Redis): Promise<boolean> {
  const { name } = library();
  const listed = await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', name) as unknown[];
  // LIBRARYNAME matches by pattern: a listed library of another name is not ours
  return listed.some((entry) => Array.isArray(entry) && entry[1] === name);
}

/** Loads the library into one Redis server unless it holds it already. */
async function loadInto(node: Redis): Promise<void> {
  if (await holdsLibrary(node)) return;
  const { source } = library();
  await node.call('FUNCTION', 'LOAD', source).catch((err: unknown) => {
    if (!(err instanceof Error && err.message.includes('already exists'))) throw err; // another process was first
  });
}

const loading = new WeakMap<Redis | Cluster, Promise<void>>();

/**
 * Makes sure Redis holds the library (each master of a Cluster; replicas get it by
 * replication). Concurrent callers share one attempt. Rejects when Redis refuses it.
 */
export function ensureLibrary(client: Redis | Cluster): Promise<void> {
  let attempt = loading.get(client);
  if (!attempt) {
    attempt = Promise.all(mastersOf(client).map(loadInto)).then(() => undefined)
      .finally(() => loading.delete(client));
    loading.set(client, attempt);
  }
  return attempt;
}

/** ensureLibrary at start, where a Redis older than 7.0 (no functions) refuses the start with a clear message. */
export function loadLibraryAtStart(client: Redis | Cluster): Promise<void> {
  return ensureLibrary(client).catch((err: unknown) => {
    if (err instanceof Error && /unknown command .?FUNCTION/i.test(err.message)) {
      throw new Error(`Redis 7.0 or later is required: the service's scripts are a function library (FUNCTION LOAD), and this Redis answered: ${err.message}`);
    }
    throw err;
  });
}

/**
 * Runs call; when Redis did not hold the function (so nothing ran), loads the library and
 * runs it once more.
 */
export function withLibrary<T>(client: Redis | Cluster, call: () => Promise<T>): Promise<T> {
  return call().catch((err: unknown) => {
    if (!isMissingFunction(err)) throw err;
    return ensureLibrary(client).then(call);
  });
}

/** The scripts as methods of client: each an FCALL of its function, key count first. */
export function attachScripts(client: Redis | Cluster): void {
  const { functions } = library();
  const methods = {} as ScriptClient;
  for (const name of SCRIPT_NAMES) {
    const fn = functions[name];
    methods[name] = (numKeys, ...keysAndArgs) => withLibrary(client, () => client.fcall(fn, numKeys, ...keysAndArgs));
  }
  Object.assign(client, methods);
}
