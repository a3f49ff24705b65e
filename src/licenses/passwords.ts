import argon2 from 'argon2';

// argon2id at OWASP's minimum (19 MiB, 2 passes, 1 lane); hashing runs on libuv's thread
// pool, so it never blocks the event loop. Figures and reasons: bench/README.md.
const PARAMS = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export class Passwords {
  private dummy: Promise<string> | null = null;

  hash(password: string): Promise<string> {
    return argon2.hash(password, PARAMS);
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false; // a corrupt hash is a failed login, not a server error
    }
  }

  /** Spends the time of one verification, so an unknown license key answers as slowly as a wrong password. */
  async burn(password: string): Promise<void> {
    this.dummy ??= this.hash('unknown-license-key');
    await this.verify(await this.dummy, password);
  }
}
