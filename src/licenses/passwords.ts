import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Hashing happens in a child process at nice 19 (src/cli/hasher.ts, which also holds the
// argon2id parameters): it never blocks nor starves the event loop, and the server never
// loads argon2 itself.
const hasherPath = fileURLToPath(new URL('../cli/hasher.js', import.meta.url));

interface Pending {
  resolve(value: string | boolean): void;
  reject(err: Error): void;
}

export class Passwords {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private dummy: Promise<string> | null = null;

  hash(password: string): Promise<string> {
    return this.call({ op: 'hash', password }) as Promise<string>;
  }

  verify(hash: string, password: string): Promise<boolean> {
    return this.call({ op: 'verify', hash, password }) as Promise<boolean>;
  }

  /** Spends the time of one verification, so an unknown license key answers as slowly as a wrong password. */
  async burn(password: string): Promise<void> {
    this.dummy ??= this.hash('unknown-license-key');
    await this.verify(await this.dummy, password);
  }

  close(): void {
    this.closed = true;
    this.child?.disconnect();
    this.child = null;
  }

  private call(job: Record<string, unknown>): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new Error('password hasher closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.process().send({ id, ...job });
    });
  }

  /** The hasher child, started on first use and again if it ever dies. */
  private process(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(hasherPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (m: { id: number; value?: string | boolean; error?: string }) => {
      const waiting = this.pending.get(m.id);
      if (!waiting) return;
      this.pending.delete(m.id);
      if (m.error !== undefined) waiting.reject(new Error(m.error));
      else waiting.resolve(m.value as string | boolean);
    });
    child.on('exit', () => {
      if (this.child === child) this.child = null;
      for (const [id, waiting] of this.pending) {
        this.pending.delete(id);
        waiting.reject(new Error('password hasher exited'));
      }
    });
    this.child = child;
    return child;
  }
}
