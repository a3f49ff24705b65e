import net from 'node:net';
import { DATABASE_URL, type Teardown } from './harness.js';

// Postgres made to fail: a proxy in front of the test database that a test cuts, blackholes
// and restores (startPostgresProxy gives the DATABASE_URL that goes through it).

/**
 * A TCP proxy in front of Postgres that can be cut (every connection dropped, new ones
 * refused) and restored, to play "Postgres is down" for the usage worker; or put in a
 * blackhole (connections accepted and kept open, every byte in either direction dropped,
 * nothing ever answered), to play a Postgres that hangs.
 */
export class CuttableProxy {
  /** both ends of every connection that forwards */
  private readonly sockets = new Set<net.Socket>();
  /** connections held open by the blackhole: accepted there, or forwarding when it began */
  private readonly held = new Set<net.Socket>();
  private mode: 'open' | 'down' | 'blackhole' = 'open';
  private readonly server: net.Server;
  port = 0;

  constructor(private readonly targetPort: number, private readonly targetHost = '127.0.0.1') {
    this.server = net.createServer((client) => {
      if (this.mode === 'down') {
        client.destroy();
        return;
      }
      if (this.mode === 'blackhole') {
        this.hold(client);
        return;
      }
      const upstream = net.connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
        this.held.delete(client);
        this.held.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /** Keeps a socket open and reads (and drops) whatever arrives on it. */
  private hold(socket: net.Socket): void {
    this.held.add(socket);
    const drop = () => {
      socket.destroy();
      this.held.delete(socket);
    };
    socket.on('error', drop).on('close', drop);
    socket.on('data', () => {});
    socket.resume();
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.mode = 'down';
    for (const s of [...this.sockets, ...this.held]) s.destroy();
    this.sockets.clear();
    this.held.clear();
  }

  /**
   * Accepts connections and never answers: new ones reach nothing, open ones stop
   * forwarding in both directions (bytes read and dropped), all stay open.
   */
  blackhole(): void {
    this.mode = 'blackhole';
    for (const s of this.sockets) {
      s.unpipe();
      this.hold(s);
    }
    this.sockets.clear();
  }

  /** Forwards again. Connections the blackhole held lost bytes mid-protocol: they are dropped. */
  restore(): void {
    this.mode = 'open';
    for (const s of this.held) s.destroy();
    this.held.clear();
  }

  get connections(): number {
    return this.sockets.size / 2;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A CuttableProxy in front of the test database, closed at teardown (register it before the
 * service that uses it, so the service stops first: tap runs teardowns last-in, first-out),
 * and the DATABASE_URL through it; `settings` become URL parameters (session settings).
 */
export async function startPostgresProxy(t: Teardown, settings: Record<string, string> = {}): Promise<{ proxy: CuttableProxy; url: string }> {
  const target = new URL(DATABASE_URL);
  const proxy = new CuttableProxy(Number(target.port || 5432), target.hostname);
  const port = await proxy.listen();
  t.teardown(() => proxy.close());
  const via = new URL(DATABASE_URL);
  via.hostname = '127.0.0.1';
  via.port = String(port);
  for (const [name, value] of Object.entries(settings)) via.searchParams.set(name, value);
  return { proxy, url: via.toString() };
}
