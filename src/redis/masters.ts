import { Cluster, type Redis } from 'ioredis';

/** The servers that take writes: the one Redis, or each master of a Cluster as the client knows them now. */
export function mastersOf(client: Redis | Cluster): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}
