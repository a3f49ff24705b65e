// Highly-available Redis topologies of a test's own, real processes on loopback, and the
// means to make a failover lose acknowledged writes (test/helpers/ha/):
//   - startReplicatedRedis: a master and replicas; promote() by hand;
//   - startVip: a TCP forwarder playing a virtual IP that moves to the promoted node;
//   - startSentinels: redis-sentinel processes that fail the master over by themselves;
//   - startReplicatedCluster: a Redis Cluster with a replica per master, failing over by
//     itself, and partition(): one node cut off by iptables;
//   - cutReplicas / killMasterAndResume / loseWritesOnFailover, then writtenOffLost and
//     counterLost: the procedure that loses writes for sure, and its proof.
// Every process is SIGKILLed and every folder removed at teardown; every wait is bounded and
// names what it waited for. test/faults/ha.topology.test.ts runs each.

export { persistenceArgs, RedisNode, type Appendfsync, type LaunchSpec } from './ha/node.js';
export { call, parseInfo, ReplyError, type Address, type CallOptions, type Reply } from './ha/resp.js';
export { ReplicatedRedis, startReplicatedRedis, type ReplicatedOptions } from './ha/replicated.js';
export { startVip, type Vip } from './ha/vip.js';
export { Sentinels, startSentinels, type SentinelOptions } from './ha/sentinel.js';
export {
  parseClusterNodes, ReplicatedCluster, startReplicatedCluster, type ClusterOptions, type NodeLine, type Shard,
} from './ha/cluster.js';
export { partitionAddress, partitionUnavailable, type Partition } from './ha/partition.js';
export {
  counterLost, cutReplicas, killMasterAndResume, loseWritesOnFailover, writtenOffLost, type LostWindow, type ReplicaCut,
} from './ha/loseWrites.js';
