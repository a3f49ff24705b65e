import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { connectPostgres } from '../../src/db/pg.js';
import { createRedis } from '../../src/redis/client.js';
import { KeySpace } from '../../src/redis/keys.js';
import { UsageWorker } from '../../src/usage/worker.js';
import { runWrk } from './wrk.js';

// What make bench does between measured runs: mint fresh sign tokens, and empty the usage
// streams into Postgres.

/**
 * The usage worker, run by the driver between measured runs only, so streams stay small
 * and no Postgres write competes with a measurement. Then Postgres is settled (VACUUM,
 * CHECKPOINT): otherwise the run after a large drain pays for autovacuum and checkpoint
 * work the one before it caused (seen: the server measured second in a round lost 20-40 %).
 */
export async function usageDrainer(env: Record<string, string>, databaseUrl: string): Promise<{ drain(): Promise<void>; end(): Promise<void> }> {
  const config = loadConfig(env, 'worker');
  const sql = await connectPostgres(databaseUrl, 'bench', 2);
  const drain = async () => {
    const worker = new UsageWorker(createRedis(config, 'bench-drain', { commandTimeoutMs: 60_000 }), sql, new KeySpace('bench'),
      { batchSize: 5000, blockMs: 20, claimIdleMs: 60_000, lingerMs: 0, lingerEvents: 1 }, pino({ level: 'silent' }));
    await worker.start();
    while ((await worker.lag()) > 0) await new Promise((r) => setTimeout(r, 50));
    await worker.stop();
    await sql.unsafe('vacuum (analyze) token_issues, token_redemptions, licenses');
    await sql.unsafe('checkpoint');
  };
  return { drain, end: async () => void (await sql.end()) };
}

/**
 * Mints with wrk (mint.lua) through a service's sign-token, 64 connections, going round the
 * access tokens of a file. mint(atLeast, access, from): a fresh file of at least `atLeast`
 * tokens (0: what `seconds` x 2.5 of minting gives); the caller drains their issuance events.
 */
export function tokenMinter(opts: { work: string; loadCpu: string; seconds: number; base: string; accessFile: string }) {
  let files = 0;
  /** tokens a second each minting service gave last time: a mint asked for `atLeast` lasts about as long as it needs */
  const rates = new Map<string, number>();
  const count = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  return async (atLeast = 0, access = opts.accessFile, from = opts.base): Promise<string> => {
    const file = path.join(opts.work, `tokens-${files++}.txt`);
    writeFileSync(file, '');
    const rate = rates.get(from);
    let seconds = atLeast > 0 && rate ? Math.ceil((1.1 * atLeast) / rate) + 1 : Math.ceil(opts.seconds * 2.5) + 1;
    for (let spent = 0; ;) {
      await runWrk({ cpu: opts.loadCpu, url: `${from}/api/v1/auth/sign-token`, script: 'mint.lua', connections: 64, seconds, args: [access, file] });
      spent += seconds;
      const have = count(file);
      rates.set(from, have / spent);
      if (have >= atLeast) return file;
      seconds = Math.ceil(((atLeast - have) / have) * seconds) + 1;
    }
  };
}
