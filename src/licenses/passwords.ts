import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ServiceUnavailable } from '../errors.js';

// Hashing happens in a child process at nice 19 (src/cli/hasher.ts, which also holds the
// argon2id parameters): it never blocks nor starves the event loop, and the server never
// loads argon2 itself. The queue in front of it is bounded and sheds load with 503 when
// full; a job whose client has gone is dropped before it is hashed; a child that dies is
// replaced, and only the jobs it held are answered 503. Customers come first: the admin
// API's hashes (license creation, an import, a password change) wait in a queue of their
// own, served only when no customer's job waits, and hold at most all but one of the
// hasher's slots, so a get-token never waits behind an import.
const hasherPath = fileURLToPath(new URL('../cli/hasher.js', import.meta.url));

/** What a job needs of its request: whether the client is still there. */
export interface Requester {
  readonly aborted: boolean;
}

interface Job {
  id: number;
  op: 'hash' | 'verify';
  /** an admin API hash: its own queue, after every customer's job */
  admin: boolean;
  password: string;
  hash?: string;
  requester: Requester | undefined;
  queuedAt: number;
  resolve(value: string | boolean): void;
  reject(err: Error): void;
}

/** Recent verification times kept to imitate one (see burn). */
const SAMPLES = 32;
/** A child that died this soon after its start is restarted only after this pause. */
const RESTART_PAUSE_MS = 250;

export class Passwords {
  private child: ChildProcess | null = null;
  private childStartedAt = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  /** customers' jobs (get-token's verifications) */
  private readonly waiting: Job[] = [];
  /** the admin API's hashes */
  private readonly adminWaiting: Job[] = [];
  private adminRunning = 0;
  private readonly running = new Map<number, Job>();
  private nextId = 1;
  private closed = false;
  private readonly verifyMs: number[] = [];
  private calibration: Promise<unknown> | null = null;

  constructor(
    /** jobs waiting beyond the ones being hashed: past this, 503 (PASSWORD_QUEUE_MAX) */
    private readonly maxWaiting = 64,
    private readonly concurrency = Math.min(4, availableParallelism()),
    /** slots admin hashes may hold: one is always left for customers (when there are two) */
    private readonly adminSlots = Math.max(1, concurrency - 1),
  ) {}

  /** jobs waiting for the hasher (/metrics) */
  get queued(): number {
    return this.waiting.length + this.adminWaiting.length;
  }

  /** jobs the hasher holds (/metrics) */
  get hashing(): number {
    return this.running.size;
  }

  /** A hash for the admin API: after every customer's job (see the top of this file). */
  hash(password: string, requester?: Requester): Promise<string> {
    return this.call('hash', password, undefined, requester, true) as Promise<string>;
  }

  verify(hash: string, password: string, requester?: Requester): Promise<boolean> {
    return this.call('verify', password, hash, requester, false) as Promise<boolean>;
  }

  /**
   * Takes as long as verifying a password does, so an unknown license key answers as
   * slowly as a wrong password, without spending a hash on it: it waits for one of the
   * recent verifications' times (queueing included), drawn at random. The first call
   * measures one real verification, on behalf of every caller waiting for it (so no
   * one caller's going away cancels it).
   */
  async burn(password: string): Promise<void> {
    if (this.verifyMs.length === 0) {
      this.calibration ??= (this.call('hash', 'unknown-license-key', undefined, undefined, false) as Promise<string>)
        .then((dummy) => this.verify(dummy, password))
        .finally(() => {
          this.calibration = null;
        });
      await this.calibration;
      return;
    }
    const ms = this.verifyMs[Math.floor(Math.random() * this.verifyMs.length)] as number;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  close(): void {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.child?.disconnect();
    this.child = null;
    for (const job of [...this.waiting.splice(0), ...this.adminWaiting.splice(0)]) job.reject(new ServiceUnavailable('password hasher closed'));
  }

  private call(op: Job['op'], password: string, hash: string | undefined, requester: Requester | undefined, admin: boolean): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new ServiceUnavailable('password hasher closed'));
    const queue = admin ? this.adminWaiting : this.waiting;
    if (queue.length >= this.maxWaiting) {
      return Promise.reject(new ServiceUnavailable('password hashing queue full', 1));
    }
    return new Promise((resolve, reject) => {
      queue.push({ id: this.nextId++, op, admin, password, hash, requester, queuedAt: Date.now(), resolve, reject });
      this.pump();
    });
  }

  /** The next job to hash: a customer's, else an admin's while admin hashes have a slot. */
  private next(): Job | undefined {
    if (this.waiting.length > 0) return this.waiting.shift();
    return this.adminRunning < this.adminSlots ? this.adminWaiting.shift() : undefined;
  }

  /** Sends waiting jobs to the child while it has room; drops those whose client has gone. */
  private pump(): void {
    while (this.running.size < this.concurrency) {
      if (this.waiting.length === 0 && (this.adminWaiting.length === 0 || this.adminRunning >= this.adminSlots)) return;
      const child = this.process();
      if (child === null) return; // restarting shortly
      const job = this.next() as Job;
      if (job.requester?.aborted) {
        job.reject(new ServiceUnavailable('client gone before its password was hashed'));
        continue;
      }
      if (job.admin) this.adminRunning++;
      this.running.set(job.id, job);
      child.send({ id: job.id, op: job.op, password: job.password, hash: job.hash }, undefined, undefined, () => {});
    }
  }

  private settle(m: { id: number; value?: string | boolean; error?: string }): void {
    const job = this.running.get(m.id);
    if (!job) return;
    this.running.delete(m.id);
    if (job.admin) this.adminRunning--;
    if (m.error !== undefined) {
      job.reject(new Error(m.error));
    } else {
      if (job.op === 'verify') {
        if (this.verifyMs.length >= SAMPLES) this.verifyMs.shift();
        this.verifyMs.push(Date.now() - job.queuedAt);
      }
      job.resolve(m.value as string | boolean);
    }
    this.pump();
  }

  /** The hasher child, started on first use and again after it dies (not in a tight loop). */
  private process(): ChildProcess | null {
    if (this.child) return this.child;
    const pause = this.childStartedAt + RESTART_PAUSE_MS - Date.now();
    if (pause > 0) {
      this.restartTimer ??= setTimeout(() => {
        this.restartTimer = null;
        this.pump();
      }, pause);
      return null;
    }
    const child = fork(hasherPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.childStartedAt = Date.now();
    child.on('message', (m: { id: number; value?: string | boolean; error?: string }) => this.settle(m));
    child.on('error', () => {
      // a failed send or kill; the exit handler below does the recovery
    });
    child.on('exit', () => {
      if (this.child !== child) return;
      this.child = null;
      for (const job of this.running.values()) job.reject(new ServiceUnavailable('password hasher restarted', 1));
      this.running.clear();
      this.adminRunning = 0;
      if (!this.closed) this.pump();
    });
    this.child = child;
    return child;
  }
}
