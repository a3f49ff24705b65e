import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

// The processes under test, each pinned with taskset: a private Redis, the service and the
// three ceiling servers.
const buildRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Pinned {
  name: string;
  child: ChildProcess;
  pid: number;
  port: number;
}

export const JWT_SECRET = randomBytes(32).toString('hex');
/** the bench service's Ed25519 key of license tokens and receipts (SIGNING_KEYS) */
export const SIGNING_KEYS = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
export const ADMIN_TOKEN = randomBytes(24).toString('base64url');

function waitFor(child: ChildProcess, pattern: RegExp, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${seen.slice(-400)}`)), 20_000);
    const onData = (d: Buffer) => {
      seen += d.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${name} exited (${code}): ${seen.slice(-400)}`)));
  });
}

/** inherit false: `env` is the whole environment (nothing of the driver's own leaks in). */
export async function startPinned(
  name: string, cpu: string, command: string[], env: Record<string, string | undefined>, ready: RegExp, port: number, inherit = true,
): Promise<Pinned> {
  const child = spawn('taskset', ['-c', cpu, ...command], { env: inherit ? { ...process.env, ...env } : env, stdio: ['ignore', 'pipe', 'pipe'] });
  await waitFor(child, ready, name);
  return { name, child, pid: child.pid as number, port };
}

export async function startRedis(cpu: string, port: number): Promise<Pinned> {
  const p = await startPinned('redis', cpu, ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no', '--dir', tmpdir(), '--maxmemory-policy', 'noeviction'], {}, /Ready to accept connections/, port);
  const client = new Redis(port);
  await client.flushall();
  await client.quit();
  return p;
}

/**
 * A replica of the Redis on masterPort (no persistence either), once its link is up. Its
 * first sync loads from the socket, not a file; any file it writes goes to the temporary
 * folder, never to the folder the bench was started in.
 */
export async function startReplica(cpu: string, port: number, masterPort: number): Promise<Pinned> {
  const p = await startPinned('redis-replica', cpu, ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no', '--dir', tmpdir(), '--repl-diskless-load', 'on-empty-db', '--replicaof', '127.0.0.1', String(masterPort)],
  {}, /Ready to accept connections/, port);
  const client = new Redis(port);
  try {
    for (let i = 0; i < 200 && !/master_link_status:up/.test(await client.info('replication')); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    await client.quit();
  }
  return p;
}

/**
 * What the service needs set to serve the bench, no default fitting: plain HTTP (no
 * certificates here: as behind a TLS-terminating proxy), a JWT secret, a signing key, its port, the bench's
 * Redis and Postgres and its namespace in them. Every other setting is left at its default.
 */
export function requiredEnv(redisPort: number, databaseUrl: string, port: number): Record<string, string> {
  return {
    ALLOW_HTTP: '1', JWT_SECRET, SIGNING_KEYS, PORT: String(port), HOST: '127.0.0.1',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'bench', DATABASE_URL: databaseUrl, PG_SCHEMA: 'bench',
  };
}

export function serviceEnv(redisPort: number, databaseUrl: string, port: number): Record<string, string> {
  return {
    ...requiredEnv(redisPort, databaseUrl, port), ADMIN_TOKEN,
    // one server process, pinned to its core (BENCH_ONLY=workers measures more)
    WORKERS: '1',
    // the rate-limit step runs (as in production) but never refuses
    RATE_VALIDATE_PER_MIN: '1000000000', RATE_SIGN_TOKEN_PER_MIN: '1000000000',
    RATE_GET_TOKEN_PER_MIN: '1000000000', RATE_CHECK_QUOTA_PER_MIN: '0',
    // the usage worker runs between measured runs (see run.ts), not inside them
    RUN_WORKER: '0', LOG_LEVEL: 'warn', QUOTA_CACHE_SECONDS: '30',
  };
}

/**
 * With profileDir, the service writes a V8 CPU profile there when it stops (make profile).
 * root: another build's output folder (BENCH_BASELINE: the service before a change).
 */
export function startService(cpu: string, env: Record<string, string>, port: number, profileDir?: string, root = buildRoot): Promise<Pinned> {
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`];
  // the service logs nothing at warn level when it starts: wait for the port instead
  return startPinned('service', cpu, ['node', ...profile, path.join(root, 'src/cli/server.js')],
    { ...env, LOG_LEVEL: 'info' }, /"listening"/, port);
}

export function startCeiling(level: 'a' | 'b' | 'c', cpu: string, env: Record<string, string>, port: number): Promise<Pinned> {
  const file = { a: 'a-json.js', b: 'b-jwt.js', c: 'c-redis.js' }[level];
  return startPinned(`ceiling ${level}`, cpu, ['node', path.join(buildRoot, 'bench/ceilings', file)],
    { ...env, PORT: String(port) }, /ceiling listening/, port);
}

/** SIGTERM and wait for the exit, so a profiled service writes its profile. */
export function stopGracefully(p: Pinned): Promise<void> {
  if (p.child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 15_000);
    p.child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    p.child.kill('SIGTERM');
  });
}

export function stopAll(processes: Pinned[]): void {
  for (const p of processes) p.child.kill('SIGKILL');
}
