import net from 'node:net';

/** A forwarded connection: the client's side and the upstream one. */
export type Pair = [net.Socket, net.Socket];

/** Forwards an accepted connection to 127.0.0.1:target, keeping the pair in `pairs` until either side ends (ha/vip.ts, ha/vipProcess.ts). */
export function forward(client: net.Socket, target: number, pairs: Set<Pair>): void {
  const upstream = net.connect(target, '127.0.0.1');
  const pair: Pair = [client, upstream];
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
}
