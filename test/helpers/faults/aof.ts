import { readdir, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { sleep } from '../wait.js';

// The private Redis's append-only file: which incremental AOF it appends to, its size over
// time, and cutting it back to what a power failure would leave.

/** The incremental AOF file the private Redis appends to (Redis 7: appendonlydir/*.incr.aof), and its size. */
export async function incrAof(dir: string): Promise<{ file: string; size: number } | null> {
  const aofDir = path.join(dir, 'appendonlydir');
  const names = await readdir(aofDir).catch(() => [] as string[]);
  const incr = names.filter((n) => n.endsWith('.incr.aof')).sort((a, b) => Number(/\.(\d+)\.incr\.aof$/.exec(a)?.[1]) - Number(/\.(\d+)\.incr\.aof$/.exec(b)?.[1]));
  const last = incr[incr.length - 1];
  if (last === undefined) return null;
  const file = path.join(aofDir, last);
  return { file, size: (await stat(file)).size };
}

/** The incremental AOF's size every intervalMs, to know what the file held a while ago. */
export class AofSizes {
  readonly samples: { at: number; file: string; size: number }[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(dir: string, intervalMs = 20) {
    this.done = (async () => {
      while (this.running) {
        const aof = await incrAof(dir).catch(() => null);
        if (aof) this.samples.push({ at: Date.now(), ...aof });
        await sleep(intervalMs);
      }
    })();
  }

  /** The last sample taken at or before `at`. */
  before(at: number): { at: number; file: string; size: number } | undefined {
    return this.samples.filter((s) => s.at <= at).at(-1);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

/** Cuts a file back to `size` bytes (what a power failure leaves of a file written since its last fsync). */
export async function truncateTo(file: string, size: number): Promise<void> {
  await truncate(file, size);
}
