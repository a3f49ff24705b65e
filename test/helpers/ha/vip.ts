import { spawn } from 'node:child_process';
import net from 'node:net';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Teardown } from '../harness.js';
import { forward, type Pair } from './forward.js';

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
  const pairs = new Set<Pair>();
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
    forward(client, target, pairs);
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

/** A virtual IP in a child process of its own (ha/vipProcess.ts), for tests that run the service through it. */
export interface VipProcess {
  port: number;
  url: string;
  /** new connections go to `next`; every forwarded one is dropped; resolves once done */
  switchTo(next: number): Promise<void>;
}

export async function startVipProcess(t: Teardown, targetPort: number): Promise<VipProcess> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./vipProcess.js', import.meta.url)), String(targetPort)],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  const lines = readline.createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const next = (): Promise<string> => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the VIP process did not answer within 5 s')), 5000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
  });
  const port = Number(/^listening (\d+)$/.exec(await next())?.[1]);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async switchTo(to: number) {
      const done = next();
      child.stdin?.write(`switch ${to}\n`);
      if ((await done) !== 'switched') throw new Error('the VIP process did not switch');
    },
  };
}
