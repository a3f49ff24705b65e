import { readFileSync } from 'node:fs';
import path from 'node:path';
import { luaDir } from '../paths.js';
import { IDEMPOTENCY_WINDOW_MS } from './keys.js';
import { Outcome } from './outcomes.js';
import { SIGN_TOKEN_SECONDS } from '../tokens/jwt.js';

// The text of a script as Redis is given it: lua/name.lua with its "-- @include" lines
// replaced, the outcome codes and shared constants rendered as Lua among them. One concern:
// turning lua/ into source; what a call sends and how its reply is read are elsewhere
// (./scriptCall.ts and the modules that build calls).

/** "local DONE = 0" and so on, for the scripts. */
function luaOutcomes(): string {
  return Object.entries(Outcome).filter(([, v]) => typeof v === 'number').map(([k, v]) => `local ${k} = ${v}`).join('\n');
}

/** The constants the scripts share with this code (the "-- @include constants" of a script). */
function luaConstants(): string {
  return `local SIGN_TOKEN_MS = ${SIGN_TOKEN_SECONDS * 1000}\nlocal IDEMPOTENCY_WINDOW_MS = '${IDEMPOTENCY_WINDOW_MS}'`;
}

const sources = new Map<string, string>();

/** lua/includes/name.lua, or the outcomes and constants this code shares with the scripts. */
export function includeSource(include: string): string {
  return include === 'outcomes' ? luaOutcomes() : include === 'constants' ? luaConstants()
    : readFileSync(path.join(luaDir, 'includes', `${include}.lua`), 'utf8');
}

/**
 * A script's text with its "-- @include name" lines replaced by lua/includes/name.lua (as
 * BullMQ does). withServer false: without server.lua, which the function library holds once
 * for all its functions.
 */
export function scriptSource(name: string, { withServer = true } = {}): string {
  const id = `${name}:${withServer}`;
  let lua = sources.get(id);
  if (lua === undefined) {
    lua = readFileSync(path.join(luaDir, `${name}.lua`), 'utf8').replace(/^-- @include (\w+)$/gm, (_, include: string) =>
      include === 'server' && !withServer ? '-- (server.lua: at the top of the library)' : includeSource(include));
    sources.set(id, lua);
  }
  return lua;
}
