import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redis, Cluster } from 'ioredis';
import { luaDir } from '../paths.js';

type Reply = (string | number | null)[];

/** The Lua scripts, loaded once at start; ioredis sends EVALSHA and falls back to EVAL. */
export interface ScriptClient {
  credentials(...keysAndArgs: (string | number)[]): Promise<Reply>;
  failures(...keysAndArgs: (string | number)[]): Promise<Reply>;
  checkQuota(...keysAndArgs: (string | number)[]): Promise<Reply>;
  sync(...keysAndArgs: (string | number)[]): Promise<[outcome: number, fenced: number]>;
  fence(...keysAndArgs: (string | number)[]): Promise<number>;
  usedFloor(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<number>;
  /** numKeys first: the batch decides how many keys it has */
  redeem(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<Reply>;
  issue(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<Reply>;
}

const definitions: [keyof ScriptClient, number | undefined][] = [
  ['credentials', 3],
  ['failures', 1],
  ['checkQuota', 2],
  ['sync', 1],
  ['fence', 1],
  ['usedFloor', undefined],
  ['redeem', undefined],
  ['issue', undefined],
];

const sources = new Map<string, string>();

/** A script's text with its "-- @include name" lines replaced by lua/includes/name.lua (as BullMQ does). */
export function scriptSource(name: string): string {
  let lua = sources.get(name);
  if (lua === undefined) {
    lua = readFileSync(path.join(luaDir, `${name}.lua`), 'utf8').replace(/^-- @include (\w+)$/gm, (_, include: string) =>
      readFileSync(path.join(luaDir, 'includes', `${include}.lua`), 'utf8'));
    sources.set(name, lua);
  }
  return lua;
}

export function defineScripts(client: Redis | Cluster): void {
  for (const [name, numberOfKeys] of definitions) {
    client.defineCommand(name, numberOfKeys === undefined ? { lua: scriptSource(name) } : { numberOfKeys, lua: scriptSource(name) });
  }
}

/** Result codes of redeem.lua and issue.lua (their headers list them). */
export const enum ScriptResult {
  OK = 0,
  RATE_LIMITED = 1,
  TOKEN_UNKNOWN = 2,
  TOKEN_USED = 3,
  LICENSE_MISS = 4,
  LICENSE_INVALID = 5,
  ORIGIN_DENIED = 6,
  QUOTA_EXHAUSTED = 7,
  LICENSE_EXPIRED = 8,
  LICENSE_INACTIVE = 9,
  INSUFFICIENT_QUOTA = 10,
  LICENSE_UNKNOWN = 11,
  /** the call reached Redis after its deadline and changed nothing (the client had its 503) */
  LATE = 12,
}

/** A script's result code as the script returned it (a number, or a numeric string). */
export function scriptResult(value: unknown): ScriptResult {
  return Number(value) as ScriptResult;
}
