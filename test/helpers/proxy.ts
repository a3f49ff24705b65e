import net from 'node:net';
import { DATABASE_URL, type Teardown } from './harness.js';

// Postgres made to fail: a proxy in front of the test database that a test cuts, blackholes
// and restores (startPostgresProxy gives the DATABASE_URL that goes through it). It also
// counts the statements its clients run, by their text, as Postgres is asked to run them.

/** The StartupMessage's protocol version (3.0), and the requests that may come before it, in the same framing. */
const PROTOCOL_3 = 196608;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/**
 * Reads what a client sends Postgres (the frontend half of the wire protocol) and counts each
 * statement run, by its text: a simple Query, or an Execute of the portal a Bind made from a
 * statement a Parse named (prepared once per connection, executed many times). A connection
 * it cannot read (encrypted) is left alone: nothing of it is counted.
 */
class StatementReader {
  private pending = Buffer.alloc(0);
  private phase: 'startup' | 'messages' | 'unreadable' = 'startup';
  private readonly statements = new Map<string, string>();
  private readonly portals = new Map<string, string>();

  constructor(private readonly counted: (text: string) => void) {}

  feed(chunk: Buffer): void {
    if (this.phase === 'unreadable') return;
    this.pending = Buffer.concat([this.pending, chunk]);
    for (;;) {
      if (this.phase === 'startup') {
        if (this.pending.length < 8) return;
        const length = this.pending.readInt32BE(0);
        const code = this.pending.readInt32BE(4);
        if (code !== PROTOCOL_3 && code !== SSL_REQUEST && code !== GSSENC_REQUEST) return this.giveUp();
        if (this.pending.length < length) return;
        if (code === PROTOCOL_3) this.phase = 'messages'; // else the server's one-byte reply follows, then TLS or the StartupMessage
        this.pending = this.pending.subarray(length);
        continue;
      }
      if (this.pending.length < 5) return;
      const length = this.pending.readInt32BE(1);
      if (length < 4) return this.giveUp();
      if (this.pending.length < 1 + length) return;
      this.message(String.fromCharCode(this.pending[0] as number), this.pending.subarray(5, 1 + length));
      this.pending = this.pending.subarray(1 + length);
    }
  }

  private giveUp(): void {
    this.phase = 'unreadable';
    this.pending = Buffer.alloc(0);
  }

  private message(type: string, body: Buffer): void {
    const strings = (n: number): string[] => {
      const out: string[] = [];
      let at = 0;
      for (let i = 0; i < n; i++) {
        const end = body.indexOf(0, at);
        out.push(body.toString('utf8', at, end));
        at = end + 1;
      }
      return out;
    };
    if (type === 'Q') this.counted(strings(1)[0] as string);
    else if (type === 'P') {
      const [name, text] = strings(2) as [string, string];
      this.statements.set(name, text);
    } else if (type === 'B') {
      const [portal, statement] = strings(2) as [string, string];
      this.portals.set(portal, this.statements.get(statement) ?? '');
    } else if (type === 'E') this.counted(this.portals.get(strings(1)[0] as string) ?? '');
  }
}

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
  /** the statement that resets the next connection sending it (resetOnStatement) */
  private resetOn: { matches: (text: string) => boolean; done: () => void } | null = null;
  /** how many times each statement text was run through this proxy */
  private readonly runs = new Map<string, number>();
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
      const reader = new StatementReader((text) => {
        this.runs.set(text, (this.runs.get(text) ?? 0) + 1);
        if (this.resetOn?.matches(text)) {
          this.resetOn.done();
          this.resetOn = null;
          client.resetAndDestroy(); // read before it is piped on: it never reaches Postgres
          upstream.destroy();
        }
      });
      client.on('data', (chunk: Buffer) => {
        if (!this.held.has(client)) reader.feed(chunk); // what the blackhole holds never reaches Postgres
      });
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /** How many times the clients ran a statement of exactly this text (a query or an execution of a prepared one), so far. */
  statementRuns(text: string): number {
    return this.runs.get(text) ?? 0;
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

  /**
   * Resets (TCP RST, as a crashed peer or a failing-over address does) the next connection
   * that sends a statement `matches` accepts, before the statement reaches Postgres; resolves
   * when it has.
   */
  resetOnStatement(matches: (text: string) => boolean): Promise<void> {
    return new Promise((done) => { this.resetOn = { matches, done }; });
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
