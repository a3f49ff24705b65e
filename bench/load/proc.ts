import { readdirSync, readFileSync } from 'node:fs';

// CPU and memory of a process from /proc: utime + stime in clock ticks (100 per second on
// Linux), and the resident set.
const TICK_US = 10_000;

export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // fields 14 and 15 of stat(5)
}

/** A process's CPU and its children's (living ones: a server's processes, nginx's workers), µs. */
export function treeMicros(pid: number): number {
  let sum = cpuMicros(pid);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  for (const child of children === '' ? [] : children.split(' ')) sum += cpuMicros(Number(child));
  return sum;
}

export function rssKiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

/**
 * CPU of every postgres process of this machine (the bench writes to the machine's
 * Postgres), children that ended included: the postmaster's cutime and cstime hold what its
 * reaped children used (autovacuum workers, backends of closed connections), so a delta
 * between two readings counts a process however short its life.
 */
export function postgresCpu(): number {
  let sum = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      sum += (Number(fields[11]) + Number(fields[12])) * TICK_US;
      const parent = Number(fields[1]);
      if (readFileSync(`/proc/${parent}/comm`, 'utf8').trim() !== 'postgres') {
        sum += (Number(fields[13]) + Number(fields[14])) * TICK_US; // the postmaster: its reaped children
      }
    } catch {
      // gone meanwhile: its CPU shows in the postmaster's cutime from the next reading on
    }
  }
  return sum;
}
