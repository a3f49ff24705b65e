import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { Teardown } from '../harness.js';

// A network partition on loopback: iptables DROP rules between one address and others, in
// a chain of the test's own (HA-<pid>-<n>) that INPUT jumps to. Every packet on loopback
// passes INPUT, so a rule there cuts both directions of every connection between the two
// addresses, established or new, while neither process notices anything but silence (no
// reset), as a partition looks. The rules match only addresses the test gave its own
// processes (127.<random>.<random>.<n>, see cluster.ts); nothing else on the machine is
// affected. The chain is removed on heal(), at teardown, and when the test's process exits
// without its teardown.
//
// Why iptables rather than SIGSTOP: a paused master is cut off from the bus too, but it
// takes no writes while cut off, and whatever its clients sent meanwhile runs when it is
// resumed. A partitioned master runs on: its side's clients write to it until it sees it
// is in a minority (cluster-node-timeout), and those writes are lost when it rejoins as a
// replica of the master promoted on the other side. That is the split brain to test.

const run = promisify(execFile);

/** iptables as root, or through passwordless sudo. */
function command(args: string[]): [string, string[]] {
  const root = process.getuid?.() === 0;
  return root ? ['iptables', ['-w', ...args]] : ['sudo', ['-n', 'iptables', '-w', ...args]];
}

async function iptables(...args: string[]): Promise<string> {
  const [file, argv] = command(args);
  const { stdout } = await run(file, argv, { timeout: 10_000 });
  return stdout;
}

/** The chains this process added and has not removed yet. */
const chains = new Set<string>();

function removeChainSync(chain: string): void {
  for (const args of [['-D', 'INPUT', '-j', chain], ['-F', chain], ['-X', chain]]) {
    const [file, argv] = command(args);
    try {
      execFileSync(file, argv, { stdio: 'ignore', timeout: 10_000 });
    } catch {
      // already gone
    }
  }
  chains.delete(chain);
}

process.once('exit', () => {
  for (const chain of [...chains]) removeChainSync(chain);
});

/** Null when iptables can be used here (root or passwordless sudo), else why not and how to fix it. */
export async function partitionUnavailable(): Promise<string | null> {
  try {
    await iptables('-L', 'INPUT', '-n');
    return null;
  } catch (err) {
    return `iptables cannot be used (${(err as Error).message.split('\n')[0]}): the partition needs Debian's iptables ` +
      '(make ha-tools, or apt-get install -y iptables) and root or passwordless sudo';
  }
}

export interface Partition {
  /** the address cut off */
  readonly address: string;
  /** the addresses it cannot reach, nor they it */
  readonly from: string[];
  /** whether heal() has run */
  readonly healed: boolean;
  /** Removes the rules: packets flow again (retransmitted ones included). */
  heal(): Promise<void>;
}

let sequence = 0;

/** Cuts `address` off from every address of `from` (both directions, every port); healed at teardown. */
export async function partitionAddress(t: Teardown, address: string, from: string[]): Promise<Partition> {
  const unavailable = await partitionUnavailable();
  if (unavailable) throw new Error(unavailable);
  const chain = `HA-${process.pid}-${++sequence}`;
  chains.add(chain);
  let healed = false;
  const heal = async () => {
    if (healed) return;
    healed = true;
    await iptables('-D', 'INPUT', '-j', chain);
    await iptables('-F', chain);
    await iptables('-X', chain);
    chains.delete(chain);
  };
  t.teardown(async () => {
    if (!healed) removeChainSync(chain);
    healed = true;
  });
  await iptables('-N', chain);
  for (const other of from) {
    await iptables('-A', chain, '-s', address, '-d', other, '-j', 'DROP');
    await iptables('-A', chain, '-s', other, '-d', address, '-j', 'DROP');
  }
  await iptables('-I', 'INPUT', '1', '-j', chain);
  return {
    address,
    from,
    get healed() {
      return healed;
    },
    heal,
  };
}
