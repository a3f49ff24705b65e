import { ConfigError, ownSecret, type Env } from './vars.js';

// The two lists of shared secrets the service checks bearers against: the HMAC keys of its
// tokens (JWT_SECRETS or JWT_SECRET) and the admins' tokens (ADMIN_TOKENS or ADMIN_TOKEN).
// One concern: each is a name:secret list with a single-variable shorthand, whose names
// must be unique and whose secrets must be long and no placeholder.

export interface JwtKey {
  /** the kid of the tokens it signs */
  kid: string;
  secret: string;
}

/** The kid of JWT_SECRET when it is the only key (JWT_SECRETS=default:<secret> is the same). */
export const DEFAULT_KID = 'default';
const KID = /^[A-Za-z0-9._-]{1,64}$/;
const SECRET_HINT = 'at least 32 bytes (e.g. `openssl rand -hex 32`)';

/** JWT_SECRETS (kid:secret,...) or JWT_SECRET, validated. */
export function jwtKeys(env: Env): JwtKey[] {
  const single = env.JWT_SECRET ?? '';
  const list = env.JWT_SECRETS ?? '';
  if (single !== '' && list !== '') throw new ConfigError('set JWT_SECRETS or JWT_SECRET, not both (JWT_SECRET=s is JWT_SECRETS=default:s)');
  if (list === '') {
    if (Buffer.byteLength(single) < 32) throw new ConfigError(`JWT_SECRET (or JWT_SECRETS) is required and must be ${SECRET_HINT}`);
    return [{ kid: DEFAULT_KID, secret: ownSecret('JWT_SECRET', single) }];
  }
  const keys: JwtKey[] = [];
  for (const entry of list.split(',')) {
    const colon = entry.indexOf(':');
    const kid = colon < 0 ? '' : entry.slice(0, colon).trim();
    const secret = colon < 0 ? '' : entry.slice(colon + 1);
    if (!KID.test(kid)) throw new ConfigError('JWT_SECRETS must be kid:secret,... with kids of letters, digits, ".", "_" and "-" (at most 64)');
    if (Buffer.byteLength(secret) < 32) throw new ConfigError(`JWT_SECRETS: the secret of "${kid}" must be ${SECRET_HINT}`);
    if (keys.some((k) => k.kid === kid)) throw new ConfigError(`JWT_SECRETS names the kid "${kid}" twice`);
    keys.push({ kid, secret: ownSecret(`JWT_SECRETS: the secret of "${kid}"`, secret) });
  }
  return keys;
}

/** An admin of the admin API: the name its changes are recorded under (src/licenses/audit.ts), and its bearer token. */
export interface AdminToken {
  name: string;
  token: string;
}

/** The name of ADMIN_TOKEN when it is the only admin token (ADMIN_TOKENS=admin:t is the same). */
export const DEFAULT_ADMIN = 'admin';
const ADMIN_NAME = /^[a-z0-9._-]{1,32}$/;
/**
 * A secret a client sends as a bearer token (ADMIN_TOKEN, METRICS_TOKEN): a request can only
 * send visible ASCII (src/routes/schemas.ts bearer), so another one could never be used.
 */
export const BEARER_SECRET = /^[\x21-\x7e]{16,4096}$/;
/** As BEARER_SECRET, and no comma (the list's separator). */
const ADMIN_TOKEN_TEXT = /^[\x21-\x2b\x2d-\x7e]{16,4096}$/;

/** ADMIN_TOKENS (name:token,...) or ADMIN_TOKEN, validated; none set: []. */
export function adminTokens(env: Env): AdminToken[] {
  const single = env.ADMIN_TOKEN ?? '';
  const list = env.ADMIN_TOKENS ?? '';
  if (single !== '' && list !== '') {
    throw new ConfigError('set ADMIN_TOKENS or ADMIN_TOKEN, not both (ADMIN_TOKEN=t is ADMIN_TOKENS=admin:t)');
  }
  if (list === '') {
    if (single === '') return [];
    if (!BEARER_SECRET.test(single)) {
      throw new ConfigError('ADMIN_TOKEN must be 16 to 4096 printable ASCII characters without spaces');
    }
    return [{ name: DEFAULT_ADMIN, token: ownSecret('ADMIN_TOKEN', single, 'openssl rand -base64 33') }];
  }
  const admins: AdminToken[] = [];
  for (const entry of list.split(',')) {
    const colon = entry.indexOf(':');
    const name = colon < 0 ? '' : entry.slice(0, colon).trim();
    const token = colon < 0 ? '' : entry.slice(colon + 1).trim();
    if (!ADMIN_NAME.test(name)) {
      throw new ConfigError('ADMIN_TOKENS must be name:token,... with names of 1-32 lower-case letters, digits, ".", "_" and "-"');
    }
    if (!ADMIN_TOKEN_TEXT.test(token)) {
      throw new ConfigError(`ADMIN_TOKENS: the token of "${name}" must be 16 to 4096 printable ASCII characters without spaces or commas`);
    }
    if (admins.some((a) => a.name === name)) throw new ConfigError(`ADMIN_TOKENS names the admin "${name}" twice`);
    const twin = admins.find((a) => a.token === token);
    if (twin) throw new ConfigError(`ADMIN_TOKENS: "${name}" and "${twin.name}" have the same token (each admin needs its own)`);
    admins.push({ name, token: ownSecret(`ADMIN_TOKENS: the token of "${name}"`, token, 'openssl rand -base64 33') });
  }
  return admins;
}
