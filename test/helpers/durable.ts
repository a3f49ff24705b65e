import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Harness, Teardown } from './harness.js';
import { bucketOf } from '../../src/redis/keys.js';

const run = promisify(execFile);

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls until check() returns true; throws with the label after timeoutMs. */
export async function waitFor(label: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for: ${label}`);
    await sleep(25);
  }
}

/** The usage stream of a company, as lua/redeem.lua and lua/issue.lua write it. */
export function streamOf(prefix: string, firmaId: string): string {
  return `${prefix}:{${bucketOf(firmaId)}}:ev`;
}

/** The Redis copy of a license. */
export function licenseHashOf(prefix: string, firmaId: string): string {
  return `${prefix}:{${bucketOf(firmaId)}}:l:${firmaId}`;
}

/** Every usage stream of a service (src/redis/keys.ts: STREAM_BUCKETS). */
export function allStreams(prefix: string): string[] {
  const out: string[] = [];
  for (let b = 0; b < 16; b++) out.push(`${prefix}:{${b}}:ev`);
  return out;
}

/** The claims of a JWT, unverified (to learn the token id of a token the service issued). */
export function claimsOf(jwt: string): { firma_id: string; token_id: string; imza_tipi: number; iat: number; exp: number } {
  const payload = jwt.split('.')[1] as string;
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}

/** get-token once, then sign-token until `count` sign tokens are in hand (RATE_* must allow it). */
export async function mintTokens(
  h: Harness, licenseKey: string, password: string, count: number, imzaTipi = 0,
): Promise<{ accessToken: string; tokens: string[] }> {
  const first = await h.getToken(licenseKey, password, imzaTipi);
  if (first.status !== 200) throw new Error(`get-token: ${first.status} ${first.text}`);
  const tokens: string[] = [first.body.signToken];
  const accessToken: string = first.body.accessToken;
  const more = await Promise.all(
    Array.from({ length: count - 1 }, () => h.signToken(accessToken, imzaTipi)),
  );
  for (const res of more) {
    if (res.status !== 200) throw new Error(`sign-token: ${res.status} ${res.text}`);
    tokens.push(res.body.signToken);
  }
  return { accessToken, tokens };
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

/** A free loopback port (and its cluster bus port, +10000) at the moment of asking. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 35000);
    const ok = await Promise.all([port, port + 10000].map((p) => new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)));
    })));
    if (ok.every(Boolean)) return port;
  }
}

export interface LocalCluster {
  ports: number[];
  nodes: string;
}

/**
 * A Redis Cluster of three masters on loopback ports, in a temporary folder; the servers
 * are killed and the folder removed at teardown (register it before the service's harness,
 * so the service stops first: tap runs teardowns last-in, first-out).
 */
export async function startRedisCluster(t: Teardown, masters = 3): Promise<LocalCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'redis-cluster-'));
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    await Promise.all(children.map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    })));
    await rm(dir, { recursive: true, force: true });
  });
  const ports: number[] = [];
  while (ports.length < masters) {
    const port = await freePort();
    if (ports.includes(port)) continue;
    ports.push(port);
    const child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
      '--cluster-config-file', `nodes-${port}.conf`, '--dir', dir, '--save', '', '--appendonly', 'no',
      '--daemonize', 'no',
    ], { stdio: 'ignore' });
    children.push(child);
  }
  for (const port of ports) {
    await waitFor(`redis-server on ${port}`, async () => {
      try {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'ping']);
        return stdout.trim() === 'PONG';
      } catch {
        return false;
      }
    }, 10_000);
  }
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
  for (const port of ports) {
    await waitFor(`cluster_state:ok on ${port}`, async () => {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
      return stdout.includes('cluster_state:ok');
    }, 15_000);
  }
  return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`).join(',') };
}
