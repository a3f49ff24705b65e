import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisConfigCheck } from '../config/redis.js';
import { isCluster, whenReady, type RedisClient } from './client.js';
import { mastersOf } from './masters.js';

// Redis read at start (docs/operations.md#redis-configuration-check). Single use and exact books rest
// on Redis keeping every key the service writes until the service drops it: a Redis that
// evicts under memory pressure can take a bucket's restart epoch (a token whose "used"
// marker a restart lost is redeemable again), a queued usage event (a
// spent unit never reaches Postgres), or, under volatile-* policies, the keys that expire:
// token markers, Idempotency-Key records and rate-limit counters. So any maxmemory-policy
// but noeviction refuses the start, even with maxmemory 0: the policy applies the moment a
// limit is set (CONFIG SET, a managed plan, a container), with no restart to catch it.

/** What CONFIG GET returned on one master, or why it could not be read. */
export type MasterSettings =
  | { node: string; settings: Readonly<Record<string, string>> }
  | { node: string; unreadable: string };

export interface Verdict {
  /** the one-line reason to refuse the start; null: start */
  refusal: string | null;
  /** one line each, logged as warnings */
  warnings: string[];
}

/** The settings read on every master (each in its own CONFIG GET: Redis 6 takes one pattern per call). */
export const CHECKED_SETTINGS = ['maxmemory-policy', 'appendonly'] as const;

const SAFE_POLICY = 'noeviction';

function list(nodes: string[]): string {
  return nodes.join(', ');
}

/** Why the policies found are unsafe; allkeys-* (or one this code does not know) is the worse case. */
function evictionHarm(policies: string[]): string {
  const onlyVolatile = policies.every((p) => p.startsWith('volatile-'));
  return onlyVolatile
    ? 'under memory pressure it may evict the keys that expire, which are the token markers (unused tokens refused as used), ' +
      'the Idempotency-Key records (a retry refused instead of answered again) and the rate-limit and failed-login counters (limits lifted)'
    : 'under memory pressure it may evict any key of the service, a bucket\'s restart epoch (a token redeemed twice) ' +
      'or a queued usage event (a spent unit forgotten) among them';
}

/**
 * The verdict on what the masters answered. mode: REDIS_CONFIG_CHECK (refuse: refuse on an
 * evicting policy, warn when unreadable; strict: refuse on both; warn: warn on both; off:
 * nothing); production: NODE_ENV=production, where appendonly no is worth a warning.
 */
export function judgeRedisConfig(masters: MasterSettings[], mode: RedisConfigCheck, production: boolean): Verdict {
  const verdict: Verdict = { refusal: null, warnings: [] };
  if (mode === 'off') return verdict;
  const evicting: { node: string; policy: string }[] = [];
  const unreadable: { node: string; why: string }[] = [];
  const volatileStore: string[] = [];
  for (const master of masters) {
    if ('unreadable' in master) {
      unreadable.push({ node: master.node, why: master.unreadable });
      continue;
    }
    const policy = master.settings['maxmemory-policy'];
    if (policy === undefined) unreadable.push({ node: master.node, why: 'no maxmemory-policy in its answer' });
    else if (policy !== SAFE_POLICY) evicting.push({ node: master.node, policy });
    if (master.settings.appendonly === 'no') volatileStore.push(master.node);
  }

  if (evicting.length > 0) {
    const nodes = evicting.length === 1
      ? `Redis ${evicting[0]?.node} has maxmemory-policy ${evicting[0]?.policy}`
      : `Redis ${list(evicting.map((e) => `${e.node} (${e.policy})`))} have a maxmemory-policy other than noeviction`;
    const harm = `${nodes}: ${evictionHarm(evicting.map((e) => e.policy))}; set maxmemory-policy noeviction`;
    if (mode === 'warn') verdict.warnings.push(`${harm}; starting anyway (REDIS_CONFIG_CHECK=warn)`);
    else verdict.refusal = `${harm}, or REDIS_CONFIG_CHECK=warn to start anyway`;
  }
  if (unreadable.length > 0) {
    const what = `could not read the configuration of Redis ${list(unreadable.map((u) => `${u.node} (${u.why})`))}`;
    if (mode === 'strict') {
      verdict.refusal ??= `${what}: REDIS_CONFIG_CHECK=strict needs CONFIG GET; allow it, or set REDIS_CONFIG_CHECK=refuse to start with a warning`;
    } else {
      verdict.warnings.push(`${what}: not checked; maxmemory-policy must be noeviction on every master${production ? ' (and appendonly yes)' : ''}, else a token may be redeemed twice`);
    }
  }
  if (production && volatileStore.length > 0) {
    verdict.warnings.push(
      `Redis ${list(volatileStore)} ${volatileStore.length === 1 ? 'has' : 'have'} appendonly no: a restart loses the usage events not yet in Postgres ` +
      '(the usage worker\'s lag: docs/durability.md) with the quota they spent, and every outstanding token is refused; ' +
      'set appendonly yes with appendfsync everysec or always',
    );
  }
  return verdict;
}

/** The start was refused: the message is the one-line reason. */
export class RedisConfigRefused extends Error {
  override name = 'RedisConfigRefused';
}

/** An error Redis answered (unknown or renamed command, NOPERM), as opposed to no answer at all. */
function isReplyError(err: unknown): err is Error {
  return err instanceof Error && err.name === 'ReplyError';
}

function nodeName(node: Redis): string {
  return `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`;
}

/** A Cluster's master connections are made on first use; waits until this one is ready. */
async function connected(node: Redis, timeoutMs: number): Promise<void> {
  if (node.status === 'ready') return;
  if (node.status === 'wait') {
    await node.connect();
    return;
  }
  await whenReady(node as RedisClient, timeoutMs);
}

/** CONFIG GET of CHECKED_SETTINGS on one master; Redis refusing the command makes it unreadable (other failures reject). */
async function readMaster(node: Redis, timeoutMs: number): Promise<MasterSettings> {
  const name = nodeName(node);
  await connected(node, timeoutMs);
  try {
    const settings: Record<string, string> = {};
    const answers = await Promise.all(CHECKED_SETTINGS.map((key) => node.config('GET', key) as Promise<string[]>));
    for (const answer of answers) {
      for (let i = 0; i + 1 < answer.length; i += 2) settings[String(answer[i])] = String(answer[i + 1]);
    }
    return { node: name, settings };
  } catch (err) {
    if (!isReplyError(err)) throw err;
    return { node: name, unreadable: (err.message.split('\n')[0] ?? '').trim().slice(0, 160) };
  }
}

/** Every master's settings: the single Redis, or each master of the Cluster (known once the client is ready). */
export async function readMasters(redis: RedisClient, timeoutMs: number): Promise<MasterSettings[]> {
  if (isCluster(redis)) await whenReady(redis, timeoutMs);
  const masters = mastersOf(redis);
  return Promise.all(masters.map((node) => readMaster(node, timeoutMs)));
}

/**
 * Reads and judges Redis's configuration before the service writes a key: logs each
 * warning once, and rejects with RedisConfigRefused when the start must be refused.
 */
export async function checkRedisConfig(
  redis: RedisClient, mode: RedisConfigCheck, production: boolean, log: Logger, timeoutMs = 10_000,
): Promise<void> {
  if (mode === 'off') return;
  const masters = await readMasters(redis, timeoutMs);
  const verdict = judgeRedisConfig(masters, mode, production);
  for (const warning of verdict.warnings) log.warn({ redisConfigCheck: mode }, warning);
  if (verdict.refusal !== null) throw new RedisConfigRefused(verdict.refusal);
}
