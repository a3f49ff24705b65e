import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { FUZZ_SEED, runsFor } from '../helpers/fuzz.js';
import { TEST_SIGNING_KEY } from '../helpers/signingKeys.js';

// Every secret-bearing setting refuses a value anyone could know: the example values the
// repository ships (read here from the example file's history of values, and the current
// file must ship none), placeholders, one character repeated, a bare word. The message names
// the setting and never repeats the value. Generated secrets are always accepted.

const SECRET = randomBytes(32).toString('hex');
const BASE = { JWT_SECRET: SECRET, SIGNING_KEYS: TEST_SIGNING_KEY, ALLOW_HTTP: '1' };
const ALICE = randomBytes(24).toString('base64url');

/** Each secret-bearing setting: the environment that carries `value` in it. */
const SETTINGS: [string, (value: string) => Record<string, string>][] = [
  ['JWT_SECRET', (v) => ({ ...BASE, JWT_SECRET: v })],
  ['JWT_SECRETS', (v) => ({ ...BASE, JWT_SECRET: '', JWT_SECRETS: `k1:${SECRET},k2:${v}` })],
  ['ADMIN_TOKEN', (v) => ({ ...BASE, ADMIN_TOKEN: v })],
  ['ADMIN_TOKENS', (v) => ({ ...BASE, ADMIN_TOKENS: `alice:${ALICE},bob:${v}` })],
  ['METRICS_TOKEN', (v) => ({ ...BASE, METRICS_TOKEN: v })],
  ['REDIS_PASSWORD', (v) => ({ ...BASE, REDIS_PASSWORD: v })],
  ['REDIS_SENTINEL_PASSWORD', (v) => ({ ...BASE, REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_SENTINEL_PASSWORD: v })],
  ['REDIS_URL', (v) => ({ ...BASE, REDIS_URL: `redis://svc:${encodeURIComponent(v)}@10.0.0.1:6379` })],
  ['DATABASE_URL', (v) => ({ ...BASE, DATABASE_URL: `postgres://license:${encodeURIComponent(v)}@10.0.0.1:5432/license` })],
];

/** Values printable enough for every setting (no spaces, no commas: the list settings' separators). */
const PLACEHOLDERS = [
  'change-me-to-48-random-bytes-in-base64', // the example file's values before it shipped them empty
  'change-me-to-a-long-random-token',
  'CHANGE-ME-ALICE-TOKEN-0123456789abc',
  'changeme-changeme-changeme-changeme-42',
  'replace_this_with_a_real_secret_value_please',
  '<your-secret-of-48-random-bytes-here-please>',
  'your-own-token-goes-here-0123456789abcdefgh',
  'example-secret-0123456789-0123456789-012345',
  '${JWT_SECRET_FROM_THE_VAULT_0123456789_ABCDEF}',
  'x'.repeat(48),
  'ab12'.repeat(12),
  '0000000000000000000000000000000000000000000000',
];

function refusal(env: Record<string, string>): Error | null {
  try {
    loadConfig(env);
    return null;
  } catch (err) {
    return err as Error;
  }
}

t.test('the example settings file ships no secret values', async (t) => {
  const example = readFileSync(new URL('../../../deploy/systemd/license-service.env.example', import.meta.url), 'utf8');
  const set = example.split('\n').filter((l) => /^(JWT_SECRETS?|ADMIN_TOKENS?|METRICS_TOKEN|REDIS_PASSWORD|REDIS_SENTINEL_PASSWORD)=/.test(l));
  t.ok(set.length >= 2, `it names the secrets (${set.map((l) => l.split('=')[0]).join(', ')})`);
  t.same(set.filter((l) => !/=$/.test(l)), [], 'each of them empty');
  const env = Object.fromEntries(example.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  t.match(refusal({ ...env, SIGNING_KEYS: TEST_SIGNING_KEY })?.message, /^JWT_SECRET \(or JWT_SECRETS\) is required/, 'the file as shipped refuses the start until JWT_SECRET is set');
});

t.test('every secret-bearing setting refuses placeholders, naming the setting and not the value', async (t) => {
  for (const [name, envWith] of SETTINGS) {
    for (const value of PLACEHOLDERS) {
      const err = refusal(envWith(value));
      t.match(err?.message, new RegExp(`${name}.* is not a secret: `), `${name}=${value.slice(0, 24)}…: refused`);
      t.notOk(err?.message.includes(value), `${name}: the message does not repeat the value`);
    }
  }
});

t.test('bare words are refused where a setting would take them', async (t) => {
  t.match(refusal({ ...BASE, REDIS_PASSWORD: 'password' })?.message, /^REDIS_PASSWORD is not a secret: it is a common word/);
  t.match(refusal({ ...BASE, DATABASE_URL: 'postgres://license:secret@10.0.0.1/license' })?.message, /^the password in DATABASE_URL is not a secret/);
  t.equal(refusal({ ...BASE, DATABASE_URL: 'postgres://license@10.0.0.1/license' }), null, 'a URL without a password is fine');
});

t.test('generated secrets are accepted by every setting', async (t) => {
  const generated = fc.oneof(
    fc.uint8Array({ minLength: 33, maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
    fc.uint8Array({ minLength: 24, maxLength: 48 }).map((b) => Buffer.from(b).toString('base64url')),
    fc.uint8Array({ minLength: 32, maxLength: 48 }).map((b) => Buffer.from(b).toString('hex')),
  );
  fc.assert(fc.property(generated, fc.constantFrom(...SETTINGS), (value, [name, envWith]) => {
    const err = refusal(envWith(value));
    if (err) throw new Error(`${name} refused a generated secret: ${err.message}`);
  }), { seed: FUZZ_SEED, numRuns: runsFor(5) });
  t.pass('none refused');
});
