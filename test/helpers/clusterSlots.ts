import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { LocalCluster } from './processes.js';
import { waitFor } from './wait.js';

// Moving hash slots between the masters of a test's own Redis Cluster (startRedisCluster),
// the two ways an operator does: `redis-cli --cluster reshard` (reshard), or by hand with
// CLUSTER SETSLOT and MIGRATE (moveSlotByHand), which can hold a slot half-moved while the
// test looks at what clients see. Every node's own view is read (CLUSTER NODES), never a
// client's cached one.

const run = promisify(execFile);

/** redis-cli against one node; its trimmed output. */
export async function nodeCli(port: number, ...args: (string | number)[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args.map(String)], { maxBuffer: 16 << 20 });
  return stdout.trim();
}

export interface MasterView {
  id: string;
  port: number;
  /** the slots it serves, ascending */
  slots: number[];
}

/** The masters as one node sees them (CLUSTER NODES; "[slot->-id]" markers of open slots skipped). */
export async function mastersSeenBy(port: number): Promise<MasterView[]> {
  const out: MasterView[] = [];
  for (const line of (await nodeCli(port, 'CLUSTER', 'NODES')).split('\n')) {
    const [id, address, flags, , , , , , ...ranges] = line.split(' ');
    if (id === undefined || address === undefined || !flags?.split(',').includes('master')) continue;
    const slots: number[] = [];
    for (const range of ranges) {
      if (range.startsWith('[')) continue;
      const [from, to] = range.split('-');
      for (let s = Number(from); s <= Number(to ?? from); s++) slots.push(s);
    }
    out.push({ id, port: Number(address.split(':')[1]?.split('@')[0]), slots: slots.sort((a, b) => a - b) });
  }
  return out.sort((a, b) => a.port - b.port);
}

/** The port of the master serving a slot, as every node sees it; throws unless all agree within timeoutMs. */
export async function ownerOf(cluster: LocalCluster, slot: number, timeoutMs = 15_000): Promise<number> {
  let owners: (number | undefined)[] = [];
  await waitFor(() => `every node to agree on the owner of slot ${slot} (seen: ${owners.join(', ')})`, async () => {
    owners = await Promise.all(cluster.ports.map(async (p) => (await mastersSeenBy(p)).find((m) => m.slots.includes(slot))?.port));
    return owners[0] !== undefined && owners.every((o) => o === owners[0]);
  }, timeoutMs, 100);
  return owners[0] as number;
}

/** Waits until every node sees the same slots on the same masters (what redis-cli --cluster checks first). */
export async function settled(cluster: LocalCluster, timeoutMs = 15_000): Promise<MasterView[]> {
  let views: string[] = [];
  let first: MasterView[] = [];
  await waitFor(() => `every node to agree on the slots (seen: ${views.length} views)`, async () => {
    const all = await Promise.all(cluster.ports.map(mastersSeenBy));
    first = all[0] as MasterView[];
    views = all.map((v) => JSON.stringify(v));
    return views.every((v) => v === views[0]);
  }, timeoutMs, 100);
  return first;
}

/**
 * Moves one slot from one master to another by hand, as redis-cli does it, but in two
 * steps: IMPORTING/MIGRATING, then `firstKeys` MIGRATEd; then `halfway` runs while the slot
 * is half-moved (a script naming keys on both sides gets TRYAGAIN, one naming none of the
 * source's keys ASK); then the rest MIGRATEd and the slot given to its new master on every node.
 */
export async function moveSlotByHand(
  cluster: LocalCluster, slot: number, from: MasterView, to: MasterView, firstKeys: string[], halfway: () => Promise<void>,
): Promise<void> {
  const migrate = (keys: string[]) => nodeCli(from.port, 'MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
  await nodeCli(to.port, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
  await nodeCli(from.port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
  if (firstKeys.length > 0) await migrate(firstKeys);
  await halfway();
  for (;;) {
    const keys = (await nodeCli(from.port, 'CLUSTER', 'GETKEYSINSLOT', slot, 1000)).split('\n').filter((k) => k !== '');
    if (keys.length === 0) break;
    await migrate(keys);
  }
  await nodeCli(to.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
  await nodeCli(from.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
  for (const port of cluster.ports) {
    if (port !== to.port && port !== from.port) await nodeCli(port, 'CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
  }
}

/** `redis-cli --cluster reshard`: the first `count` slots of `from` (ascending) go to `to`, keys and all. */
export async function reshard(cluster: LocalCluster, from: MasterView, to: MasterView, count: number): Promise<void> {
  await settled(cluster);
  await run('redis-cli', [
    '--cluster', 'reshard', `127.0.0.1:${from.port}`, '--cluster-from', from.id, '--cluster-to', to.id,
    '--cluster-slots', String(count), '--cluster-yes',
  ], { maxBuffer: 64 << 20 });
}

/** Sum of one error's count (INFO errorstats, e.g. "TRYAGAIN", "ASK") over the masters. */
export async function errorCount(cluster: LocalCluster, error: string): Promise<number> {
  let sum = 0;
  for (const port of cluster.ports) {
    const m = new RegExp(`^errorstat_${error}:count=(\\d+)`, 'm').exec(await nodeCli(port, 'INFO', 'errorstats'));
    sum += m ? Number(m[1]) : 0;
  }
  return sum;
}
