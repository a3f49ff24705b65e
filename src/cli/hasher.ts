import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import argon2 from 'argon2';

// The password hasher process (forked by src/licenses/passwords.ts). It runs at the lowest
// CPU priority: argon2id is meant to be expensive, and at nice 19 it takes only what the
// event loops leave, so get-token load cannot starve validate. Linux keeps a nice value per
// thread and module loading has already started libuv's pool, so every thread is niced;
// threads started later inherit it.
function niceEveryThread(): void {
  let tids: string[] = ['0'];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    // no /proc: the calling thread at least
  }
  for (const tid of tids) {
    try {
      setPriority(Number(tid), 19);
    } catch {
      // a thread that has ended meanwhile
    }
  }
}
niceEveryThread();

// argon2id at OWASP's minimum (19 MiB, 2 passes, 1 lane). Figures and reasons: bench/README.md.
const PARAMS = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

interface Job {
  id: number;
  op: 'hash' | 'verify';
  password: string;
  hash?: string;
}

process.on('message', (job: Job) => {
  const work = job.op === 'hash'
    ? argon2.hash(job.password, PARAMS)
    : argon2.verify(job.hash ?? '', job.password).catch(() => false); // a corrupt hash fails the login
  work.then(
    (value) => reply({ id: job.id, value }),
    (err: Error) => reply({ id: job.id, error: err.message }),
  );
});

function reply(message: object): void {
  if (process.connected) process.send?.(message, undefined, undefined, () => {}); // parent gone: nothing to answer
}
process.on('disconnect', () => process.exit(0));
