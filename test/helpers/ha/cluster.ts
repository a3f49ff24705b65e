import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Teardown } from '../harness.js';
import type { LocalCluster } from '../processes.js';
import { waitFor } from '../wait.js';
import { freePortOn, persistenceArgs, RedisNode, type Appendfsync } from './node.js';
import { partitionAddress, type Partition } from './partition.js';

// A Redis Cluster with replicas: `masters` masters and `replicasPerMaster` replicas each
// (redis-cli --cluster create --cluster-replicas), failing over by itself. Each node has
// a loopback address of its own, 127.<a>.<b>.<n> (a and b random for each cluster), which
// it announces (cluster-announce-ip), binds its outgoing bus and replication connections
// to (bind-source-addr), and serves on beside 127.0.0.1 (so clusterSlots.ts's nodeCli and
// redis-cli -p work as with startRedisCluster). Own addresses are what a partition needs:
// iptables rules between one node's address and the others' (partition.ts) cut that node
// off while the test, connecting from 127.0.0.1, still reaches every node.
//
// Settings: cluster-node-timeout 1000 (a node silent for a second is suspected),
// cluster-replica-validity-factor 0 (a replica however long cut off from its master may be
// promoted: the lagging replica is the point), cluster-require-full-coverage no (the other
// masters serve on while one shard fails over, as production would want), and
// cluster-allow-replica-migration no (a replica stays with its master, so the helpers'
// shards do not change behind the test's back). protected-mode no: Redis counts only
// 127.0.0.1 and ::1 as local, so a node without a password would refuse its replica
// connecting from 127.<a>.<b>.<n> (every address here is loopback all the same).

const run = promisify(execFile);

export interface ClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** cluster-node-timeout (default 1000) */
  nodeTimeoutMs?: number;
  /** cluster-require-full-coverage (default false) */
  requireFullCoverage?: boolean;
  /** the AOF of every node (default 'no-aof') */
  appendfsync?: Appendfsync;
  /** requirepass and masterauth of every node */
  password?: string;
  extraArgs?: string[];
  /** how long to wait for cluster_state:ok and the replicas' first sync (default 30 s) */
  readyTimeoutMs?: number;
}

/** One line of CLUSTER NODES. */
export interface NodeLine {
  id: string;
  host: string;
  port: number;
  flags: string[];
  /** the master's id for a replica, else null */
  masterId: string | null;
  configEpoch: number;
  linkState: string;
  /** slot ranges served, [from, to] ("[slot->-id]" markers of open slots skipped) */
  ranges: [number, number][];
}

export function parseClusterNodes(text: string): NodeLine[] {
  return text.split('\n').filter((l) => l.trim() !== '').map((line) => {
    const [id, address, flags, master, , , epoch, link, ...slots] = line.trim().split(' ');
    const [hostPort] = (address as string).split('@');
    const colon = (hostPort as string).lastIndexOf(':');
    return {
      id: id as string,
      host: (hostPort as string).slice(0, colon),
      port: Number((hostPort as string).slice(colon + 1)),
      flags: (flags as string).split(','),
      masterId: master === '-' ? null : master as string,
      configEpoch: Number(epoch),
      linkState: link as string,
      ranges: slots.filter((s) => !s.startsWith('[')).map((s) => {
        const [from, to] = s.split('-');
        return [Number(from), Number(to ?? from)] as [number, number];
      }),
    };
  });
}

const serves = (line: NodeLine, slot: number) => line.ranges.some(([from, to]) => slot >= from && slot <= to);

export interface Shard {
  master: RedisNode;
  replicas: RedisNode[];
}

export class ReplicatedCluster implements LocalCluster {
  /** node ids (CLUSTER MYID), kept across restarts by nodes.conf */
  private readonly ids = new Map<RedisNode, string>();
  private readonly partitions = new Set<Partition & { node: RedisNode }>();
  /** the master of each slot as last seen agreed (waitHealthy, waitForPromotion): waitForPromotion's default old master */
  private readonly slotMasters = new Map<number, RedisNode>();

  constructor(
    private readonly t: Teardown,
    /** every node, in start order (which are masters: shardOf, view) */
    readonly servers: RedisNode[],
    readonly password: string | undefined,
  ) {}

  /** every node's port (they are unique, and each node serves on 127.0.0.1 too) */
  get ports(): number[] {
    return this.servers.map((n) => n.port);
  }

  /** "host:port,..." of every node, as REDIS_CLUSTER_NODES takes them */
  get nodes(): string {
    return this.servers.map((n) => n.address).join(',');
  }

  /** { host, port } of every node: ioredis Cluster's startup nodes */
  get addresses(): { host: string; port: number }[] {
    return this.servers.map((n) => ({ host: n.host, port: n.port }));
  }

  async idOf(node: RedisNode): Promise<string> {
    let id = this.ids.get(node);
    if (id === undefined) {
      id = String(await node.call('CLUSTER', 'MYID'));
      this.ids.set(node, id);
    }
    return id;
  }

  byPort(port: number): RedisNode {
    const node = this.servers.find((n) => n.port === port);
    if (!node) throw new Error(`no node of this cluster on port ${port}`);
    return node;
  }

  /** Nodes that answer and are not cut off by a partition: whose view of the cluster is current. */
  observers(except: RedisNode[] = []): RedisNode[] {
    const cut = new Set([...this.partitions].filter((p) => !p.healed).map((p) => p.node));
    return this.servers.filter((n) => n.answering && !cut.has(n) && !except.includes(n));
  }

  /** CLUSTER NODES as `from` sees it (default: the first observer). */
  async view(from: RedisNode | undefined = this.observers()[0]): Promise<NodeLine[]> {
    if (!from) throw new Error('no node of the cluster answers');
    return parseClusterNodes(String(await from.call('CLUSTER', 'NODES')));
  }

  /** The hash slot of a key (CLUSTER KEYSLOT on an observer). */
  async slotOf(key: string): Promise<number> {
    const from = this.observers()[0];
    if (!from) throw new Error('no node of the cluster answers');
    return Number(await from.call('CLUSTER', 'KEYSLOT', key));
  }

  /** The master of a slot (or a key's slot) and its replicas, as an observer sees them now. */
  async shardOf(slotOrKey: number | string, from?: RedisNode): Promise<Shard> {
    const slot = typeof slotOrKey === 'number' ? slotOrKey : await this.slotOf(slotOrKey);
    const lines = await this.view(from);
    const master = lines.find((l) => l.flags.includes('master') && serves(l, slot));
    if (!master) throw new Error(`no master serves slot ${slot}: ${JSON.stringify(lines.map((l) => [l.port, l.flags.join(',')]))}`);
    return {
      master: this.byPort(master.port),
      replicas: lines.filter((l) => l.masterId === master.id).map((l) => this.byPort(l.port)),
    };
  }

  /**
   * Waits until every observer (answering, not cut off; `oldMaster` left out) names a master
   * other than `oldMaster` for `slot`, not flagged as failing, and that node answers as a
   * master with cluster_state:ok; resolves with it. `oldMaster` defaults to the slot's
   * master when the cluster was last seen healthy (waitHealthy) or after the last promotion.
   */
  async waitForPromotion(slot: number, oldMaster: RedisNode | undefined = this.slotMasters.get(slot), timeoutMs = 30_000): Promise<RedisNode> {
    if (!oldMaster) throw new Error(`no master of slot ${slot} known yet: pass the old master, or call waitHealthy first`);
    let seen = '';
    let promoted: RedisNode | null = null;
    await waitFor(() => `a master other than ${oldMaster.name} (${oldMaster.address}) for slot ${slot} on every observer (${seen})`, async () => {
      const observers = this.observers([oldMaster]);
      const named = await Promise.all(observers.map(async (o) => {
        const lines = await this.view(o).catch(() => []);
        const m = lines.find((l) => l.flags.includes('master') && serves(l, slot) && !l.flags.includes('fail') && !l.flags.includes('fail?'));
        return m?.port;
      }));
      seen = observers.map((o, i) => `${o.name} names ${named[i] ?? 'none'}`).join(', ');
      const first = named[0];
      if (first === undefined || first === oldMaster.port || !named.every((p) => p === first)) return false;
      const node = this.byPort(first);
      const [role, info] = await Promise.all([node.role(), node.call('CLUSTER', 'INFO')]).catch(() => ['', '']);
      promoted = role === 'master' && String(info).includes('cluster_state:ok') ? node : null;
      return promoted !== null;
    }, timeoutMs, 100);
    const node = promoted as unknown as RedisNode;
    for (const [s, m] of this.slotMasters) if (m === oldMaster) this.slotMasters.set(s, node);
    return node;
  }

  /**
   * Waits until `node` is a replica of `master` in its own view and in every observer's, its
   * link up at the master's replication offset (read while nothing writes).
   */
  async waitReplicaOf(node: RedisNode, master: RedisNode, timeoutMs = 30_000): Promise<void> {
    const [nodeId, masterId] = await Promise.all([this.idOf(node), this.idOf(master)]);
    let seen = '';
    await waitFor(() => `${node.name} (${node.address}) to be an in-sync replica of ${master.name} (${master.address}): ${seen}`, async () => {
      const views = await Promise.all(this.observers().map((o) => this.view(o).catch(() => [])));
      const agreed = views.every((lines) => lines.find((l) => l.id === nodeId)?.masterId === masterId);
      const [mine, theirs] = await Promise.all([node.info('replication'), master.info('replication')]);
      seen = `role ${mine.role}, master_port ${mine.master_port}, link ${mine.master_link_status}, offset ${mine.slave_repl_offset} of ${theirs.master_repl_offset}, every view agrees: ${agreed}`;
      return agreed && mine.role === 'slave' && mine.master_port === String(master.port) && mine.master_link_status === 'up' &&
        mine.master_sync_in_progress === '0' && mine.slave_repl_offset === theirs.master_repl_offset;
    }, timeoutMs, 100);
  }

  /**
   * Waits until every observer reports cluster_state:ok, all agree on the masters and
   * their slots, none flags another failing, and every replica that answers is in sync.
   */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    let seen = '';
    await waitFor(() => `a healthy cluster: ${seen}`, async () => {
      const observers = this.observers();
      const infos = await Promise.all(observers.map((o) => o.call('CLUSTER', 'INFO').then(String, () => '')));
      const notOk = observers.filter((_, i) => !infos[i]?.includes('cluster_state:ok')).map((o) => o.name);
      const views = await Promise.all(observers.map((o) => this.view(o).catch(() => [] as NodeLine[])));
      // the masters with their slots, and each replica with its master's port: the same on every observer
      const masters = views.map((lines) => JSON.stringify([
        ...lines.filter((l) => l.flags.includes('master') && l.ranges.length > 0).map((l) => [l.port, l.ranges]),
        ...lines.filter((l) => l.flags.includes('slave')).map((l) => [l.port, lines.find((m) => m.id === l.masterId)?.port]),
      ].sort()));
      const failing = views.flatMap((lines) => lines.filter((l) => l.flags.some((f) => f === 'fail' || f === 'fail?') &&
        observers.some((o) => o.port === l.port)).map((l) => l.port));
      seen = `not ok: [${notOk.join(', ')}], views of masters and replicas agree: ${masters.every((m) => m === masters[0])}, ` +
        `flagged failing: [${failing.join(', ')}]`;
      if (notOk.length > 0 || !masters.every((m) => m === masters[0]) || failing.length > 0) return false;
      const lines = views[0] as NodeLine[];
      for (const m of lines.filter((l) => l.flags.includes('master'))) {
        for (const [from, to] of m.ranges) for (let slot = from; slot <= to; slot++) this.slotMasters.set(slot, this.byPort(m.port));
      }
      for (const replica of lines.filter((l) => l.flags.includes('slave') && observers.some((o) => o.port === l.port))) {
        const master = lines.find((l) => l.id === replica.masterId);
        if (!master) return false;
        const [mine, theirs] = await Promise.all([this.byPort(replica.port).info('replication'), this.byPort(master.port).info('replication')]);
        if (mine.master_link_status !== 'up' || mine.slave_repl_offset !== theirs.master_repl_offset) {
          seen = `${this.byPort(replica.port).name}: link ${mine.master_link_status}, offset ${mine.slave_repl_offset} of ${theirs.master_repl_offset}`;
          return false;
        }
      }
      return true;
    }, timeoutMs, 100);
  }

  /**
   * Cuts `node` off from every other node of the cluster (iptables, partition.ts): both
   * directions, bus and replication; the test still reaches every node from 127.0.0.1.
   * heal() (or the teardown) removes the rules.
   */
  async partition(node: RedisNode): Promise<Partition> {
    const others = this.servers.filter((n) => n !== node).map((n) => n.host);
    const cut = Object.assign(await partitionAddress(this.t, node.host, others), { node });
    this.partitions.add(cut);
    return cut;
  }
}

/** A random 127.<a>.<b>.0 prefix (a in 64-191, b in 1-254), away from 127.0.0.x that other tests use. */
function loopbackPrefix(): string {
  return `127.${64 + Math.floor(Math.random() * 128)}.${1 + Math.floor(Math.random() * 254)}`;
}

/**
 * A Redis Cluster of `masters` masters (default 3) and `replicasPerMaster` replicas each
 * (default 1), each node on its own loopback address (and 127.0.0.1) and folder; resolves
 * once every node reports cluster_state:ok, all agree, and every replica is in sync.
 * Killed and folders removed at teardown (register it before the service's harness).
 */
export async function startReplicatedCluster(t: Teardown, options: ClusterOptions = {}): Promise<ReplicatedCluster> {
  const {
    masters = 3, replicasPerMaster = 1, nodeTimeoutMs = 1000, requireFullCoverage = false, appendfsync = 'no-aof',
    password, extraArgs = [], readyTimeoutMs = 30_000,
  } = options;
  const prefix = loopbackPrefix();
  const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password];
  const servers: RedisNode[] = [];
  const total = masters * (1 + replicasPerMaster);
  const started = [];
  for (let i = 1; i <= total; i++) {
    const host = `${prefix}.${i}`;
    started.push(RedisNode.start(t, {
      name: `node-${i}`, binary: 'redis-server', host, password,
      pickPort: () => freePortOn([host, '127.0.0.1'], true),
      argsFor: (port, dir) => [
        '--port', String(port), '--bind', host, '127.0.0.1', '--bind-source-addr', host, '--protected-mode', 'no',
        '--dir', dir, '--daemonize', 'no',
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-announce-ip', host,
        '--cluster-node-timeout', String(nodeTimeoutMs), '--cluster-replica-validity-factor', '0',
        '--cluster-require-full-coverage', requireFullCoverage ? 'yes' : 'no', '--cluster-allow-replica-migration', 'no',
        ...persistenceArgs(appendfsync), '--repl-diskless-sync', 'no', ...auth, ...extraArgs,
      ],
    }));
  }
  servers.push(...await Promise.all(started));
  await run('redis-cli', [
    ...(password === undefined ? [] : ['-a', password, '--no-auth-warning']),
    '--cluster', 'create', ...servers.map((n) => n.address), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes',
  ], { timeout: readyTimeoutMs, maxBuffer: 16 << 20 });
  const cluster = new ReplicatedCluster(t, servers, password);
  let replicas = 0;
  await waitFor(() => `${masters * replicasPerMaster} replicas in the cluster's view (seen ${replicas})`, async () => {
    replicas = (await cluster.view()).filter((l) => l.flags.includes('slave')).length;
    return replicas === masters * replicasPerMaster;
  }, readyTimeoutMs, 50);
  await cluster.waitHealthy(readyTimeoutMs);
  return cluster;
}
