import { sleep, waitFor } from '../wait.js';
import type { RedisNode } from './node.js';

// Making a failover lose acknowledged writes, on loopback, for sure. Replication is
// asynchronous, but on loopback a replica is microseconds behind: kill the master and the
// replica has everything. Pausing the replica (SIGSTOP) is not enough either: what the
// master sent waits in the replica's socket buffers and is read when it resumes. What
// works, in this order:
//   1. SIGSTOP the replica(s) that may be promoted;
//   2. CLIENT KILL TYPE replica on the master, until INFO replication lists none of them:
//      the master closes their links, and writes from now on go into no replica's socket;
//   3. the test writes on the master (acknowledged: the master has them, no replica does);
//   4. SIGKILL the master (nothing it wrote reaches anyone any more), then SIGCONT the
//      replicas: each reads what it had before the cut, finds its link closed, and cannot
//      reconnect to the dead master;
//   5. promotion: by hand (ReplicatedRedis.promote, for a VIP), or by Sentinel or the
//      Cluster, which see the master down.
// Then writtenOffLost / counterLost check that the promoted node misses the writes.

export interface ReplicaCut {
  master: RedisNode;
  replicas: RedisNode[];
  /** the master's master_repl_offset once the links were down: no cut replica has more */
  offsetAtCut: number;
  /** CLIENT KILL rounds it took */
  rounds: number;
}

export interface LostWindow extends ReplicaCut {
  /** the master's master_repl_offset just before SIGKILL: the writes between offsetAtCut and this are on no replica */
  offsetAtKill: number;
}

/** The listening ports of the replicas the master has connected now (INFO replication's slaveN: lines). */
async function connectedReplicaPorts(master: RedisNode): Promise<number[]> {
  const info = await master.info('replication');
  return Object.entries(info).filter(([k]) => /^slave\d+$/.test(k)).map(([, v]) => Number(/port=(\d+)/.exec(v)?.[1]));
}

/**
 * Steps 1 and 2: SIGSTOPs `replicas` and kills their links on `master` (CLIENT KILL TYPE
 * replica, 20 rounds at most, until INFO replication lists none of them). Replicas not cut
 * reconnect by themselves and go on syncing.
 */
export async function cutReplicas(master: RedisNode, replicas: RedisNode[]): Promise<ReplicaCut> {
  for (const r of replicas) await r.pause();
  const ports = replicas.map((r) => r.port);
  let listed: number[] = [];
  for (let round = 1; round <= 20; round++) {
    await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
    listed = (await connectedReplicaPorts(master)).filter((p) => ports.includes(p));
    if (listed.length === 0) {
      const offsetAtCut = Number((await master.info('replication')).master_repl_offset);
      return { master, replicas, offsetAtCut, rounds: round };
    }
    await sleep(50);
  }
  throw new Error(`${master.name} (${master.address}) still lists replicas on ${listed.join(', ')} after 20 rounds of CLIENT KILL TYPE replica`);
}

/**
 * Steps 4: reads the master's offset (the writes since the cut must have moved it), SIGKILLs
 * the master, SIGCONTs the cut replicas, and checks each resumed replica has no more than
 * the offset of the cut (bounded: 5 s for their INFO).
 */
export async function killMasterAndResume(cut: ReplicaCut): Promise<LostWindow> {
  const offsetAtKill = Number((await cut.master.info('replication')).master_repl_offset);
  if (!(offsetAtKill > cut.offsetAtCut)) {
    throw new Error(`nothing was written on ${cut.master.name} since the cut (offset ${offsetAtKill}, at the cut ${cut.offsetAtCut})`);
  }
  await cut.master.kill();
  for (const r of cut.replicas) await r.resume();
  for (const r of cut.replicas) {
    let offset = NaN;
    await waitFor(() => `${r.name} (${r.address}) to answer INFO after SIGCONT (offset ${offset})`, async () => {
      offset = Number((await r.info('replication').catch(() => ({} as Record<string, string>))).master_repl_offset);
      return !Number.isNaN(offset);
    }, 5000, 50);
    if (offset > cut.offsetAtCut) {
      throw new Error(`${r.name} has replication offset ${offset} after the cut at ${cut.offsetAtCut}: the cut did not hold`);
    }
  }
  return { ...cut, offsetAtKill };
}

/**
 * Steps 1 to 4 around the test's writes: cut the replicas, run `writes` (on the master:
 * directly, through a VIP, through a Sentinel or Cluster client), SIGKILL the master and
 * resume the replicas. Promotion is left to the caller.
 */
export async function loseWritesOnFailover(master: RedisNode, replicas: RedisNode[], writes: () => Promise<void>): Promise<LostWindow> {
  const cut = await cutReplicas(master, replicas);
  await writes();
  return killMasterAndResume(cut);
}

/**
 * After the promotion: the replication bytes of the window the promoted node never got.
 * Its offset when promoted is INFO replication's second_repl_offset - 1 (where its old
 * replication id ends); throws unless it was promoted at or before the cut, so that
 * every write of the window is missing.
 */
export async function writtenOffLost(promoted: RedisNode, window: LostWindow): Promise<{ promotedAt: number; lostBytes: number }> {
  const info = await promoted.info('replication');
  const second = Number(info.second_repl_offset);
  if (info.role !== 'master' || !(second > 0)) throw new Error(`${promoted.name} is no promoted master (role ${info.role}, second_repl_offset ${info.second_repl_offset})`);
  const promotedAt = second - 1;
  if (promotedAt > window.offsetAtCut) {
    throw new Error(`${promoted.name} was promoted at offset ${promotedAt}, after the cut at ${window.offsetAtCut}: it may hold writes of the window`);
  }
  return { promotedAt, lostBytes: window.offsetAtKill - promotedAt };
}

/**
 * Reads a counter on the promoted node (GET) and throws unless it is `beforeCut`, the
 * value it had when the replicas were cut: the increments acknowledged during the cut are
 * lost. Resolves with the value read.
 */
export async function counterLost(promoted: RedisNode, key: string, beforeCut: string | null): Promise<string | null> {
  const value = await promoted.call('GET', key) as string | null;
  if (value !== beforeCut) {
    throw new Error(`${promoted.name} (${promoted.address}) reads ${key} = ${value}, not ${beforeCut} as before the cut: the writes of the window were not lost`);
  }
  return value;
}
