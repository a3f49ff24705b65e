import net from 'node:net';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { KeySpace } from '../../src/redis/keys.js';
import { createLicense, NO_RATE_LIMITS, testEnv, testStorage } from '../helpers/harness.js';
import { clientOf } from '../helpers/http.js';
import { claimsOf } from '../helpers/jwt.js';
import { spawnServer } from '../helpers/processes.js';
import { TokenSource } from '../helpers/tokens.js';

// Graceful stop: on SIGTERM the real server process stops accepting, answers
// every request it has accepted, flushes the usage worker to Postgres and exits 0 within 20 s.

const N = 50;

interface RawResponse {
  status: number;
  body: string;
}

/** One keep-alive connection that sends HTTP/1.1 requests and reads their responses in order. */
class Connection {
  private buffer = Buffer.alloc(0);
  private waiting: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | null = null;
  private ended: Error | null = null;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.pump();
    });
    const end = (err?: Error): void => {
      this.ended ??= err ?? new Error('connection closed before a response');
      this.pump();
    };
    socket.on('error', end);
    socket.on('close', () => end());
  }

  static open(port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new Connection(socket)));
      socket.once('error', reject);
    });
  }

  /** Writes the request; resolves once its bytes are handed to the kernel. */
  send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<void> {
    const payload = body === undefined ? '' : JSON.stringify(body);
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}`
      + `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n`;
    return new Promise((resolve, reject) => {
      this.socket.write(head + payload, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** The next response on this connection; rejects if the connection ends first. */
  response(): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.pump();
    });
  }

  async request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<RawResponse> {
    await this.send(method, path, body, headers);
    return this.response();
  }

  close(): void {
    this.socket.destroy();
  }

  private pump(): void {
    if (!this.waiting) return;
    const text = this.buffer.toString('latin1');
    const end = text.indexOf('\r\n\r\n');
    if (end >= 0) {
      const head = text.slice(0, end);
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buffer.length >= end + 4 + length) {
        const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
        this.buffer = this.buffer.subarray(end + 4 + length);
        const waiting = this.waiting;
        this.waiting = null;
        waiting.resolve({ status: Number(head.split(' ')[1]), body });
        return;
      }
    }
    if (this.ended) {
      const waiting = this.waiting;
      this.waiting = null;
      waiting.reject(this.ended);
    }
  }
}

t.test('SIGTERM with validate requests in flight: all answered, worker flushed, exit 0', async (t) => {
  const env = testEnv('shutdown', { LOG_LEVEL: 'info', ...NO_RATE_LIMITS });
  const config = loadConfig(env);
  const { redis, sql } = testStorage(t, config); // cleaned last: teardowns run last-in, first-out
  const server = await spawnServer(t, env); // SIGKILLed at teardown if still running
  const { port } = server;
  t.ok(port > 0, `the listening line names the port (${port})`);
  const connections: Connection[] = [];
  t.teardown(() => {
    for (const c of connections) c.close();
  });

  // a license and N sign tokens, through the public and admin API of the real process
  const client = clientOf(server.url);
  const lic = await createLicense(client, {
    organizationName: 'Kapanış A.Ş.', password: 'shutdown-password', totalQuota: 1000,
    expiryDate: new Date(Date.now() + 30 * 86400_000).toISOString(),
  });
  const { firmaId } = lic;
  const source = new TokenSource(client, lic);
  const unusedToken = await source.next();
  const tokens = await source.many(N, (i) => i % 2);

  // N connections the server has accepted (each answered one request already), kept alive
  const conns = await Promise.all(Array.from({ length: N }, () => Connection.open(port)));
  connections.push(...conns);
  const warm = await Promise.all(conns.map((c) => c.request('GET', '/healthz')));
  t.ok(warm.every((r) => r.status === 200), 'every connection accepted and answered once');

  // N validates written to the server, then SIGTERM at once
  const answers = conns.map((c) => c.response());
  await Promise.all(conns.map((c, i) => c.send('POST', '/api/license/validate', { token: tokens[i] })));
  const stopped = server.stop('SIGTERM', 20_000);

  const settled = await Promise.allSettled(answers);
  const failures = settled.filter((s) => s.status === 'rejected');
  const statuses = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.status] : []));
  t.equal(failures.length, 0, `no request dropped (${failures.map((f) => String((f as PromiseRejectedResult).reason)).join('; ')})`);
  t.same(statuses.filter((s) => s !== 200), [], 'every answered validate got 200');
  const okTokenIds = settled.flatMap((s, i) => (s.status === 'fulfilled' && s.value.status === 200 ? [claimsOf(tokens[i] as string).token_id] : []));
  const usedQuotas = settled.flatMap((s) => (s.status === 'fulfilled' && s.value.status === 200 ? [JSON.parse(s.value.body).usedQuota as number] : []));
  t.same([...usedQuotas].sort((a, b) => a - b), Array.from({ length: okTokenIds.length }, (_, i) => i + 1), 'usedQuota 1..n, one each');

  const exit = await stopped;
  t.notOk(exit.timedOut, 'the process exited within 20 s');
  t.equal(exit.code, 0, `exit code 0 (stderr: ${server.text('stderr')})`);
  t.equal(exit.signal, null, 'exited by itself');
  t.match(server.text('stdout'), /"msg":"stopped"/, 'logged its stop');

  // the worker flushed before exit: Postgres holds exactly what was answered 200
  const used = await sql<{ token_id: string }[]>`select token_id from sign_tokens where firma_id = ${firmaId} and status = 'used'`;
  t.same(used.map((r) => r.token_id).sort(), [...okTokenIds].sort(), 'sign_tokens used = exactly the tokens answered 200');
  const [license] = await sql<{ used_quota: number }[]>`select used_quota::int as used_quota from licenses where firma_id = ${firmaId}`;
  t.equal(license?.used_quota, okTokenIds.length, 'licenses.used_quota = number of 200s');
  const [audit] = await sql<{ n: number }[]>`select count(*)::int as n from sign_tokens where firma_id = ${firmaId}`;
  t.equal(audit?.n, N + 1, 'every issued token is in the audit trail');
  const [unused] = await sql<{ status: string }[]>`select status from sign_tokens where token_id = ${claimsOf(unusedToken).token_id}`;
  t.equal(unused?.status, 'issued', 'the token never redeemed stays issued');
  const keys = new KeySpace(config.redisPrefix);
  const lag = (await Promise.all(keys.streams.map((s) => redis.xlen(s)))).reduce((a, b) => a + b, 0);
  t.equal(lag, 0, 'no usage event left in the Redis streams');
});
