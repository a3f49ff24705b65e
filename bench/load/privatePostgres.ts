import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';

// A Postgres cluster of the bench's own, from the installed server binaries, at Postgres's
// defaults (autovacuum on, as a production cluster runs): what a long run measures of
// autovacuum and memory is then this cluster's alone, whatever the machine's own runs with.
// As root, it runs as the postgres user (Postgres refuses root).

export interface PrivatePostgres {
  url: string;
  /** the postmaster's pid: its children are the cluster's other processes */
  pid: number;
  stop(): Promise<void>;
}

function serverBinaries(): string {
  const installed = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort().reverse() : [];
  const candidates = [process.env.PG_BINDIR, ...installed.map((v) => `/usr/lib/postgresql/${v}/bin`)];
  const found = candidates.find((dir) => dir !== undefined && existsSync(path.join(dir, 'initdb')));
  if (found === undefined) throw new Error('Postgres server binaries not found (set PG_BINDIR, or apt-get install postgresql)');
  return found;
}

/** settings: `name=value` pairs given to the server as `-c` options, over Postgres's defaults */
export async function startPrivatePostgres(port: number, settings: string[] = []): Promise<PrivatePostgres> {
  const bin = serverBinaries();
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-pg-'));
  const asPostgres = userInfo().uid === 0;
  const run = (file: string, args: string[]): [string, string[]] => (asPostgres ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]);
  if (asPostgres) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), Number(execFileSync('id', ['-g', 'postgres']).toString()));
  const data = path.join(dir, 'data');
  const [initdb, initArgs] = run(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  execFileSync(initdb, initArgs, { cwd: '/', stdio: 'ignore' });
  const [postgres, args] = run(path.join(bin, 'postgres'), ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`,
    ...settings.flatMap((setting) => ['-c', setting])]);
  const child: ChildProcess = spawn(postgres, args, { cwd: '/', stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`private Postgres did not start: ${seen.slice(-400)}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`private Postgres exited (${code}): ${seen.slice(-400)}`)));
  });
  child.stderr?.resume();
  const pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const stop = async () => {
    if (child.exitCode === null) {
      const [pgCtl, stopArgs] = run(path.join(bin, 'pg_ctl'), ['-D', data, 'stop', '-m', 'fast', '-w']);
      try {
        execFileSync(pgCtl, stopArgs, { cwd: '/', stdio: 'ignore' });
      } catch {
        process.kill(pid, 'SIGQUIT');
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', () => {
    if (child.exitCode === null) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // gone already
      }
    }
  });
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, pid, stop };
}

/** The cluster's processes: the postmaster and its children now. */
export function clusterPids(postmaster: number): number[] {
  const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim();
  return [postmaster, ...(children === '' ? [] : children.split(' ').map(Number))];
}

/** Proportional set size of these processes, KiB: shared buffers counted once, shared among them. */
export function pssKiB(pids: number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // ended meanwhile
    }
  }
  return sum;
}
