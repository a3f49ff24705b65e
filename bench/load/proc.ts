import { readFileSync } from 'node:fs';

// CPU and memory of a process from /proc: utime + stime in clock ticks (100 per second on
// Linux), and the resident set.
const TICK_US = 10_000;

export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US; // fields 14 and 15 of stat(5)
}

export function rssKiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}
