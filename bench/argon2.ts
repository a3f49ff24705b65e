import argon2 from 'argon2';

// Hashes per second on the cores this process may use (run it under taskset -c 0 for one
// core), for the parameters get-token uses and for others, to justify the choice.
const candidates: [string, Parameters<typeof argon2.hash>[1]][] = [
  ['OWASP minimum m=19MiB t=2 p=1 (used)', { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 }],
  ['OWASP alt m=12MiB t=3 p=1', { type: argon2.argon2id, memoryCost: 12288, timeCost: 3, parallelism: 1 }],
  ['OWASP alt m=46MiB t=1 p=1', { type: argon2.argon2id, memoryCost: 47104, timeCost: 1, parallelism: 1 }],
  ['node-argon2 default m=64MiB t=3 p=4', { type: argon2.argon2id }],
];
const SECONDS = Number(process.env.ARGON2_SECONDS ?? 4);

for (const [name, params] of candidates) {
  const hash = await argon2.hash('benchmark password', params);
  let done = 0;
  const until = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (Date.now() < until) {
      await argon2.verify(hash, 'benchmark password');
      done++;
    }
  }));
  process.stdout.write(`${name.padEnd(40)} ${(done / SECONDS).toFixed(1)} verifications/s\n`);
}
