import { execFile } from 'node:child_process';
import { createPrivateKey, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { ArtefactSigner, thumbprint } from '../../src/tokens/signingKeys.js';
import { LIVE_COUNTS, startHarness, testEnv } from '../helpers/harness.js';
import { newSigningKey } from '../helpers/signingKeys.js';

// The Ed25519 keys of license tokens and receipts (docs/operations.md#signing-keys): SIGNING_KEYS_FILE
// (PEM, as openssl writes it) or SIGNING_KEYS (base64 DER), the first signs, every one is
// published at /.well-known/jwks.json with its RFC 7638 thumbprint as kid; neither set (or
// empty) is none (test/system/signingKeys.none.test.ts: the service as it serves then); a key
// given wrong is refused at start with a message naming the variable, never taken for none.

const run = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), 'lic-signing-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** The public x of a base64 DER private key, as its JWK says it. */
function publicX(der: string): string {
  const key = createPublicKey(createPrivateKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'pkcs8' }));
  return (key.export({ format: 'jwk' }) as { x: string }).x;
}

async function opensslKey(name: string, ...extra: string[]): Promise<string> {
  const file = path.join(dir, name);
  await run('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', file, ...extra]);
  return file;
}

function keysOf(env: Record<string, string>) {
  return loadConfig(testEnv('signcfg', { SIGNING_KEYS: '', ...env })).signingKeys;
}

t.test('a PEM file as openssl writes it; public keys after the first are published, not used to sign', async (t) => {
  const first = await opensslKey('first.pem');
  const second = await opensslKey('second.pem');
  const { stdout: secondPublic } = await run('openssl', ['pkey', '-in', second, '-pubout']);
  const file = path.join(dir, 'set.pem');
  writeFileSync(file, `${readFileSync(first, 'utf8')}\n${secondPublic}`);
  const keys = keysOf({ SIGNING_KEYS_FILE: file });
  t.equal(keys.length, 2);
  t.ok(keys[0]?.privateKey, 'the first signs');
  t.equal(keys[1]?.privateKey, null, 'the second is a public key alone');
  for (const k of keys) t.equal(k.kid, thumbprint(k.jwk.x), 'kid: the RFC 7638 thumbprint');
  const signer = new ArtefactSigner(keys);
  const jws = signer.sign('{"a":1}');
  const [h, p, s] = jws.split('.') as [string, string, string];
  t.same(JSON.parse(Buffer.from(h, 'base64url').toString()), { alg: 'EdDSA', typ: 'JWT', kid: keys[0]?.kid });
  t.equal(Buffer.from(p, 'base64url').toString(), '{"a":1}', 'the payload exactly as given');
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: keys[0]?.jwk.x as string }, format: 'jwk' });
  t.ok(verify(null, Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url')), 'verifies with the published key');
});

t.test('refused, each with a message naming the variable; none set is no key, not a refusal', async (t) => {
  const encrypted = await opensslKey('encrypted.pem', '-aes-128-cbc', '-pass', 'pass:secret');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  const publicOnly = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  const key = newSigningKey();
  const empty = path.join(dir, 'empty.pem');
  writeFileSync(empty, 'no key here\n');
  const cases: [string, Record<string, string>, RegExp][] = [
    ['both set', { SIGNING_KEYS: key, SIGNING_KEYS_FILE: empty }, /not both/],
    ['not base64', { SIGNING_KEYS: 'not base64!' }, /SIGNING_KEYS: key 1 is not base64/],
    ['base64 of nothing useful', { SIGNING_KEYS: 'AAAA' }, /SIGNING_KEYS: key 1 is not/],
    ['an RSA key', { SIGNING_KEYS: rsa }, /SIGNING_KEYS: key 1 is an rsa key, not Ed25519/],
    ['an EC key second', { SIGNING_KEYS: `${key},${ec}` }, /SIGNING_KEYS: key 2 is an ec key, not Ed25519/],
    ['a public key first', { SIGNING_KEYS: `${publicOnly},${key}` }, /first key signs, so it must be a private key/],
    ['the same key twice', { SIGNING_KEYS: `${key},${key}` }, /same key twice/],
    ['an empty entry', { SIGNING_KEYS: `${key},` }, /SIGNING_KEYS: key 2/],
    ['a file that does not exist', { SIGNING_KEYS_FILE: path.join(dir, 'missing.pem') }, /SIGNING_KEYS_FILE .*missing\.pem cannot be read \(ENOENT\)/],
    ['a file without a key', { SIGNING_KEYS_FILE: empty }, /SIGNING_KEYS_FILE .* holds no key/],
    ['an encrypted key', { SIGNING_KEYS_FILE: encrypted }, /key 1 is encrypted/],
  ];
  for (const [name, env, message] of cases) t.throws(() => keysOf(env), message, name);
  t.same(keysOf({}), [], 'neither set: none, not refused');
  t.same(keysOf({ SIGNING_KEYS_FILE: '', SIGNING_KEYS: '' }), [], 'both empty: none, as unset');
  t.throws(() => keysOf({ SIGNING_KEYS: ' ' }), /SIGNING_KEYS: key 1 is not base64/, 'blank is a key given wrong, not none');
  t.equal(keysOf({ SIGNING_KEYS: ` ${key} ` }).length, 1, 'spaces around an entry are allowed');
});

t.test('GET /.well-known/jwks.json as deployed: every key, cacheable, the first signing', async (t) => {
  const retired = newSigningKey();
  const signing = newSigningKey();
  const h = await startHarness(t, 'jwks', { ...LIVE_COUNTS, SIGNING_KEYS: `${signing},${retired}` }, { logLevel: 'warn' });
  const res = await h.request('GET', '/.well-known/jwks.json');
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'public, max-age=3600');
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.same(res.body, {
    keys: [signing, retired].map((k) => ({ kty: 'OKP', crv: 'Ed25519', x: publicX(k), kid: thumbprint(publicX(k)), alg: 'EdDSA', use: 'sig' })),
  }, 'both keys, the signing one first, nothing private');
  t.notMatch(res.text, /"d"/, 'no private member');
  const upper = await h.request('GET', '/.WELL-KNOWN/JWKS.JSON');
  t.equal(upper.status, 200, 'paths match case-insensitively');
  t.equal((await h.request('POST', '/.well-known/jwks.json', {})).status, 405);
  const ready = await h.request('GET', '/readyz');
  t.strictSame(ready.body, { success: true, redis: 'ok', postgres: 'ok', scripts: 'ok' }, '/readyz names nothing missing');
  t.same(h.logs.filter((r) => String(r.msg).startsWith('no signing keys')), [], 'no warning about the keys');
});
