import net from 'node:net';
import type { Teardown } from '../harness.js';

// A virtual IP in front of a replicated Redis, as keepalived or a cloud's floating address
// gives one: clients connect to one loopback port, which forwards to the current master.
// When the address moves to another host (switchTo), new connections reach the new target
// and the existing ones die: the new host knows nothing of them and answers their next
// packet with a reset (here: the client's side is reset, the upstream one destroyed).

export interface Vip {
  /** the port clients connect to (127.0.0.1) */
  readonly port: number;
  /** redis://127.0.0.1:<port> (add the password yourself) */
  readonly url: string;
  /** the port new connections are forwarded to */
  readonly target: number;
  /** connections forwarded now */
  readonly connections: number;
  /** connections accepted so far, in all */
  readonly accepted: number;
  /** New connections go to `port`; every existing one is dropped (reset). */
  switchTo(port: number): void;
  /** Stops listening and drops every connection. */
  close(): Promise<void>;
}

/** A TCP forwarder on a free loopback port to 127.0.0.1:targetPort; closed at teardown. */
export async function startVip(t: Teardown, targetPort: number): Promise<Vip> {
  let target = targetPort;
  let accepted = 0;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const dropAll = () => {
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  let closed = false;
  const server = net.createServer((client) => {
    // a client reconnecting while the VIP closes would hold server.close() open for good
    if (closed) {
      client.destroy();
      return;
    }
    accepted++;
    const upstream = net.connect(target, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      if (!pairs.delete(pair)) return;
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  const close = async () => {
    if (closed) return;
    closed = true;
    const ended = new Promise<void>((resolve) => server.close(() => resolve()));
    dropAll();
    await ended;
  };
  t.teardown(close);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get target() {
      return target;
    },
    get connections() {
      return pairs.size;
    },
    get accepted() {
      return accepted;
    },
    switchTo(next: number) {
      target = next;
      dropAll();
    },
    close,
  };
}
