import { createHash, createPrivateKey } from 'node:crypto';
import { ED25519_LIBRARY, opensslSigner, sodiumSigner } from '../src/tokens/ed25519.js';
import { ArtefactSigner, keysFromList, PLACEHOLDER_SIGNING_KEY } from '../src/tokens/signingKeys.js';
import { TokenService } from '../src/tokens/jwt.js';

// What signing an artefact costs: one Ed25519 signature over a license token's or a
// receipt's payload (ArtefactSigner.sign, as the routes call it), against the HS256 sign
// token get-token signs, and the SHA-256 of a receipt's payload the usage worker takes;
// then the signature alone by each library (src/tokens/ed25519.ts: libsodium signs where
// its addon loads, OpenSSL's node:crypto elsewhere).
// CPU time of this process (process.cpuUsage), the median of rounds; run it pinned to one
// core: `taskset -c 0 node dist/bench/artefacts.js` (ARTEFACT_BENCH_CALLS calls per round).

const CALLS = Number(process.env.ARTEFACT_BENCH_CALLS ?? 20_000);
const ROUNDS = 7;
const signer = new ArtefactSigner(keysFromList(PLACEHOLDER_SIGNING_KEY, 'bench'));
const tokens = new TokenService([{ kid: 'default', secret: 'bench-secret-of-thirty-two-bytes-or-more-0123456789' }], 'license-service');
const iat = Math.floor(Date.now() / 1000);

function receipt(documents: number): string {
  return JSON.stringify({
    typ: 'receipt', iss: 'license-service', jti: '8d1c0f5e-2b7a-4c39-9e64-0a5b3f7d2c18', firma_id: 'Xq3vR8kLm2Pa', imza_tipi: 0,
    documents: Array.from({ length: documents }, (_, i) => ({ name: `recete-${i}.xml`, sha256: createHash('sha256').update(String(i)).digest('hex') })),
    iat, used_quota: 14, remaining_quota: 86,
  });
}

const license = JSON.stringify({
  typ: 'license', iss: 'license-service', firma_id: 'Xq3vR8kLm2Pa', firma_adi: 'Örnek Eczane Ltd.', active: true, license_exp: iat + 86_400 * 300,
  total_quota: 100, used_quota: 14, remaining_quota: 86, domains: ['eczane.ornek.com.tr', '*.ornek.com.tr'], iat, exp: iat + 86_400,
});

/** Microseconds of CPU per call of fn: the median of ROUNDS rounds of CALLS calls. */
function cpuPerCall(fn: () => unknown): number {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) fn();
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / CALLS);
  }
  rounds.sort((a, b) => a - b);
  return rounds[Math.floor(ROUNDS / 2)] as number;
}

const cases: [string, () => unknown][] = [
  ['HS256 sign token (get-token, for scale)', () => tokens.signSignToken({ firma_id: 'Xq3vR8kLm2Pa', firma_adi: 'Örnek Eczane Ltd.', token_id: '8d1c0f5e-2b7a-4c39-9e64-0a5b3f7d2c18', imza_tipi: 0, iat, exp: iat + 300 })],
  ['license token (EdDSA)', () => signer.sign(license)],
  ...[1, 10, 100].map((n): [string, () => unknown] => {
    const payload = receipt(n);
    return [`receipt of ${n} document${n === 1 ? '' : 's'} (EdDSA, ${payload.length} B payload)`, () => signer.sign(payload)];
  }),
  ['SHA-256 of a receipt of 10 documents (the worker)', (() => { const p = receipt(10); return () => createHash('sha256').update(p).digest('hex'); })()],
  ...signatureAlone(),
];

/** One Ed25519 signature of a receipt of 1 document's bytes, by each library this machine can load. */
function signatureAlone(): [string, () => unknown][] {
  const key = createPrivateKey({ key: Buffer.from(PLACEHOLDER_SIGNING_KEY, 'base64'), format: 'der', type: 'pkcs8' });
  const bytes = Buffer.from(receipt(1));
  const sodium = sodiumSigner(key);
  const openssl = opensslSigner(key);
  return [
    ...(sodium === null ? [] : [['the signature alone, libsodium', () => sodium(bytes)] as [string, () => unknown]]),
    ['the signature alone, OpenSSL (node:crypto)', () => openssl(bytes)],
  ];
}

for (const [, fn] of cases) fn(); // warm up
process.stdout.write(`Ed25519 signs with ${ED25519_LIBRARY} here.\n\n| artefact | µs of CPU per call (median of ${ROUNDS} × ${CALLS}) |\n|---|---|\n`);
for (const [name, fn] of cases) process.stdout.write(`| ${name} | ${cpuPerCall(fn).toFixed(1)} |\n`);
