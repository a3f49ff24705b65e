import type { Teardown } from '../harness.js';
import { freeLoopbackPort } from '../processes.js';
import { waitFor } from '../wait.js';
import { persistenceArgs, RedisNode, type Appendfsync } from './node.js';
import type { Address } from './resp.js';

// A private master and its replicas (asynchronous replication, as Redis does it), each a
// redis-server on its own loopback port and folder. Full syncs go through an RDB file on
// disk (--repl-diskless-sync no): Redis 7's diskless default waits
// repl-diskless-sync-delay (5 s) for more replicas before every full sync, which the start
// and every resync after a promotion would pay.

export interface ReplicatedOptions {
  /** replicas of the master (default 1) */
  replicas?: number;
  /** the AOF of every node (default 'no-aof'; never an RDB) */
  appendfsync?: Appendfsync;
  /** requirepass of every node (and masterauth, so that replicas sync) */
  password?: string;
  /** more redis-server arguments for every node */
  extraArgs?: string[];
  /** how long to wait for the replicas' first sync (default 15 s) */
  syncTimeoutMs?: number;
}

/** `args` with its --replicaof replaced by `master` (none when null). */
function withReplicaOf(args: string[], master: Address | null): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--replicaof') i += 2;
    else out.push(args[i] as string);
  }
  return master ? [...out, '--replicaof', master.host, String(master.port)] : out;
}

export class ReplicatedRedis {
  constructor(
    /** every node, in start order: the first master, then the replicas */
    readonly nodes: RedisNode[],
    /** the master as this helper knows it: the first, then promote()'s, or what findMaster() saw */
    public master: RedisNode,
    readonly password: string | undefined,
  ) {}

  /** every node's port, in start order */
  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  /** The nodes other than the master. */
  get replicas(): RedisNode[] {
    return this.nodes.filter((n) => n !== this.master);
  }

  /**
   * Makes `node` the master (REPLICAOF NO ONE), then points every other node that answers
   * at it (REPLICAOF host port); a dead or paused node is pointed at it on its next
   * restart(). Resolves once `node` reports role master (does not wait for the others to
   * sync: waitInSync).
   */
  async promote(node: RedisNode): Promise<void> {
    await node.call('REPLICAOF', 'NO', 'ONE');
    node.args = withReplicaOf(node.args, null);
    this.master = node;
    for (const other of this.replicas) await this.follow(other, node);
    await waitFor(`${node.name} (${node.address}) to report role master after REPLICAOF NO ONE`, async () => (await node.role()) === 'master', 5000);
  }

  /** Points a node at `master` (default: the current one): REPLICAOF now if it answers, and on its next restart. */
  async follow(node: RedisNode, master: RedisNode = this.master): Promise<void> {
    node.args = withReplicaOf(node.args, master);
    if (node.answering) await node.call('REPLICAOF', master.host, master.port);
  }

  /** Starts a killed node again as a replica of the current master and waits until every replica is in sync. */
  async rejoin(node: RedisNode, timeoutMs = 15_000): Promise<void> {
    node.args = withReplicaOf(node.args, this.master);
    await node.restart();
    await this.waitInSync(timeoutMs);
  }

  /**
   * Waits until the master has every answering replica connected and each reports
   * master_link_status:up, no sync in progress and the master's replication offset.
   */
  async waitInSync(timeoutMs = 15_000): Promise<void> {
    const master = this.master;
    let seen = '';
    await waitFor(() => `every replica of ${master.name} (${master.address}) in sync: ${seen}`, async () => {
      const replicas = this.replicas.filter((r) => r.answering);
      const m = await master.info('replication');
      const offset = m.master_repl_offset;
      const states = await Promise.all(replicas.map(async (r) => {
        const i = await r.info('replication');
        const ok = i.role === 'slave' && i.master_port === String(master.port) && i.master_link_status === 'up' &&
          i.master_sync_in_progress === '0' && i.slave_repl_offset === offset;
        return { ok, text: `${r.name}: link ${i.master_link_status}, offset ${i.slave_repl_offset}` };
      }));
      seen = `master ${m.role} offset ${offset}, connected_slaves ${m.connected_slaves}; ${states.map((s) => s.text).join('; ')}`;
      return m.role === 'master' && Number(m.connected_slaves) === replicas.length && states.every((s) => s.ok);
    }, timeoutMs, 50);
  }

  /**
   * Polls the answering nodes until exactly one reports role master (after a failover that
   * Sentinel did), makes it this helper's master and returns it.
   */
  async findMaster(timeoutMs = 15_000): Promise<RedisNode> {
    let masters: RedisNode[] = [];
    await waitFor(() => `exactly one answering node with role master (seen: ${masters.map((m) => m.name).join(', ') || 'none'})`, async () => {
      const roles = await Promise.all(this.nodes.filter((n) => n.answering).map(async (n) => [n, await n.role().catch(() => '?')] as const));
      masters = roles.filter(([, role]) => role === 'master').map(([n]) => n);
      return masters.length === 1;
    }, timeoutMs, 100);
    this.master = masters[0] as RedisNode;
    return this.master;
  }
}

/**
 * A private master and `replicas` replicas on loopback ports (127.0.0.1), each with its own
 * folder, no RDB, AOF as asked; resolves once every replica reports master_link_status:up
 * at the master's offset. Every process is SIGKILLed and every folder removed at teardown.
 */
export async function startReplicatedRedis(t: Teardown, options: ReplicatedOptions = {}): Promise<ReplicatedRedis> {
  const { replicas = 1, appendfsync = 'no-aof', password, extraArgs = [], syncTimeoutMs = 15_000 } = options;
  const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password];
  const argsFor = (port: number, dir: string) => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no',
    ...persistenceArgs(appendfsync), '--repl-diskless-sync', 'no', ...auth, ...extraArgs,
  ];
  const master = await RedisNode.start(t, {
    name: 'master', binary: 'redis-server', host: '127.0.0.1', password, pickPort: freeLoopbackPort, argsFor,
  });
  const nodes = [master];
  for (let i = 1; i <= replicas; i++) {
    nodes.push(await RedisNode.start(t, {
      name: `replica-${i}`, binary: 'redis-server', host: '127.0.0.1', password, pickPort: freeLoopbackPort,
      argsFor: (port, dir) => withReplicaOf(argsFor(port, dir), master),
    }));
  }
  const set = new ReplicatedRedis(nodes, master, password);
  await set.waitInSync(syncTimeoutMs);
  return set;
}
