import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../paths.js';

// The operator commands (licensectl, npm run dead-letters, npm run webhook-events, npm run
// openapi) read the settings the server reads. `make run` starts the server with the
// checkout's .env.dev (written by scripts/dev-env.sh) under whatever the command line sets,
// so here too: each variable of .env.dev that the environment does not set is taken from
// it, and the environment wins. In production there is no .env.dev: the environment alone
// (systemd's EnvironmentFile) is read, as the service reads it.
//
// `make run` reads the file with bash's `source`, so only what bash would read the same way
// is accepted: NAME=value (optionally after `export `), a value bare or in quotes without
// anything bash would expand. Any other line stops the command with one line naming it,
// never a value silently read differently from the server.

/** DEV_ENV_FILE: another file than the checkout's .env.dev (tests; an empty value: none). */
export const DEV_ENV_VARIABLE = 'DEV_ENV_FILE';

export class DevEnvError extends Error {}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** What bash leaves as it is: no quote, space, $, `, \, or other shell syntax. */
const BARE = /^[A-Za-z0-9_@%+=:,./^*-]*$/;
// no NUL: bash drops it from a value, where we would keep it
const SINGLE = /^'([^'\0]*)'$/;
const DOUBLE = /^"([^"$`\\\0]*)"$/;

/** The value of one assignment's right-hand side, or null when bash would read it otherwise. */
function valueOf(text: string): string | null {
  if (BARE.test(text)) return text;
  const quoted = SINGLE.exec(text) ?? DOUBLE.exec(text);
  return quoted ? (quoted[1] as string) : null;
}

/** The variables of an .env.dev text, in order; a line that is not a plain assignment: DevEnvError naming it. */
export function parseDevEnv(text: string, file: string): Map<string, string> {
  const out = new Map<string, string>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    const assignment = line.replace(/^export\s+/, '');
    const eq = assignment.indexOf('=');
    const name = eq < 0 ? '' : assignment.slice(0, eq);
    const value = eq < 0 ? null : valueOf(assignment.slice(eq + 1));
    if (!NAME.test(name) || value === null) {
      throw new DevEnvError(`${file} line ${i + 1} is not NAME=value (a value with spaces or shell characters goes in single quotes): ${JSON.stringify(line.slice(0, 60))}`);
    }
    out.set(name, value);
  });
  return out;
}

/** The file read: DEV_ENV_FILE when set, else the checkout's .env.dev. */
export function devEnvFile(env: NodeJS.ProcessEnv = process.env): string | null {
  const named = env[DEV_ENV_VARIABLE];
  if (named === undefined) return path.join(projectRoot, '.env.dev');
  return named === '' ? null : path.resolve(named);
}

/**
 * The environment with .env.dev's variables added where it sets none (the environment
 * wins); the environment as it is when there is no such file. `env` is changed in place
 * and returned, so every later reader (loadConfig) sees the same settings.
 */
export function loadDevEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const file = devEnvFile(env);
  if (file === null) return env;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return env; // production: the environment alone
    throw new DevEnvError(`cannot read ${file} (${code ?? (err as Error).message}): fix its permissions, or remove it to use the environment alone`);
  }
  for (const [name, value] of parseDevEnv(text, file)) if (env[name] === undefined) env[name] = value;
  return env;
}
