import { placeholderIn, urlPassword } from '../placeholders.js';

// The readers of one environment variable each (a whole number in a range, a flag, a
// host:port list, a secret, a URL's password) and the error they refuse with. One concern:
// every group of settings (src/config.ts, redis.ts, secrets.ts, webhooks.ts) reads its
// variables through these, so a variable is refused in the same words wherever it is read.

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** An on/off setting: 1 or 0, unset or empty being 0 (off). */
export function flagVar(env: Env, name: string, on: string, off: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new ConfigError(`${name} must be 1 (${on}) or 0 (${off}), got "${raw}"`);
}

export function parseNodes(name: string, raw: string | undefined): { host: string; port: number }[] {
  if (!raw) return [];
  return raw.split(',').map((entry) => {
    const match = /^\s*(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})\s*$/.exec(entry);
    if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new ConfigError(`${name} must be host:port,... got "${entry}"`);
    return { host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
  });
}

/** Refuses a secret-bearing setting whose value is a placeholder (src/placeholders.ts), naming the setting and not the value. */
export function ownSecret(what: string, value: string, make = 'openssl rand -base64 48'): string {
  const reason = placeholderIn(value);
  if (reason !== null) throw new ConfigError(`${what} is not a secret: ${reason}. Set one of your own (\`${make}\`)`);
  return value;
}

/** A URL whose password, if it has one, is no placeholder. */
export function urlWithOwnPassword(name: string, url: string): string {
  const password = urlPassword(url);
  if (password !== '') ownSecret(`the password in ${name}`, password);
  return url;
}
