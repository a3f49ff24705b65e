// What one call of a script is (its name, its KEYS and ARGV with the key count first, how
// its reply is read) and how it is run on a client the scripts are defined on. One concern:
// the shape every builder (./scriptBuilders.ts, ./batchScripts.ts) fills in and every
// caller runs, so that none lays out a call by hand.

import { holdWritesForTurn } from './turnWrites.js';

export type Args = (string | number)[];
export type Reply = (string | number | null)[];
export type ScriptName = 'credentials' | 'failures' | 'loginGranted' | 'checkQuota' | 'quotaAnswer' | 'count' | 'sync' | 'fence' | 'ack' | 'bury'
  | 'redeem' | 'issue' | 'settle' | 'release' | 'peek' | 'here';

/** The scripts as methods of the client (FCALLs of the function library, src/redis/library.ts); every call gives its key count first. */
export type ScriptClient = Record<ScriptName, (numKeys: number, ...keysAndArgs: Args) => Promise<unknown>>;

export const SCRIPT_NAMES: readonly ScriptName[] = [
  'credentials', 'failures', 'loginGranted', 'checkQuota', 'quotaAnswer', 'count', 'sync', 'fence', 'ack', 'bury', 'redeem', 'issue', 'settle',
  'release', 'peek', 'here',
];

/** One call of a script: its arguments (key count first) and how to read its reply. */
export interface ScriptCall<R> {
  name: ScriptName;
  args: Args;
  read(reply: unknown): R;
}

/** Runs a call on a client the scripts are defined on (src/redis/client.ts). */
export function runScript<R>(client: ScriptClient, call: ScriptCall<R>): Promise<R> {
  holdWritesForTurn(client);
  return client[call.name](...(call.args as [number, ...Args])).then(call.read);
}
