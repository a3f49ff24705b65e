import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import t from 'tap';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { claimsOf } from '../helpers/jwt.js';
import { startRedisCluster } from '../helpers/processes.js';
import { MSG } from '../helpers/shapes.js';
import { getTokenPair, signOne } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';

// On a Redis Cluster, a script whose reply is lost with its connection ran all the same: a
// redemption spent its unit. Sent again, it would find its own token spent and answer "already
// used" to the client whose redemption it was; so, as on a single Redis, the call fails (503,
// uncertain) and the client's retry with its Idempotency-Key gets the first answer.
// Each master announces a proxy in front of it (cluster-announce-port), so the service's
// connections go through the proxies; armed with a token id, a proxy passes the next call
// carrying it on to Redis, then closes that connection before any reply comes back.

const run = promisify(execFile);
const VALIDATE_503 = { success: false, message: 'Hizmet geçici olarak kullanılamıyor' };

class ReplyDropper {
  /** the text whose call runs and whose reply is lost (null: every byte passes) */
  armed: string | null = null;
  /** connections closed with a reply kept back */
  dropped = 0;
  private readonly servers: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();

  /** A proxy in front of 127.0.0.1:target; resolves to its port. */
  async front(target: number): Promise<number> {
    const server = net.createServer((client) => {
      const upstream = net.connect(target, '127.0.0.1');
      let holdReply = false;
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', close).on('close', () => {
          this.sockets.delete(s);
          close();
        });
      }
      client.on('data', (chunk: Buffer) => {
        if (this.armed !== null && chunk.includes(this.armed)) {
          this.armed = null;
          holdReply = true;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!holdReply) {
          client.write(chunk);
          return;
        }
        this.dropped++;
        close();
      });
    });
    this.servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    for (const server of this.servers) server.close();
  }
}

/** The client ports CLUSTER SLOTS names on `port`. */
async function announcedPorts(port: number): Promise<number[]> {
  const { stdout } = await run('redis-cli', ['-p', String(port), '--json', 'cluster', 'slots']);
  return (JSON.parse(stdout) as [number, number, [string, number]][]).map((range) => range[2][1]);
}

t.test('Cluster: a redemption whose reply is lost answers 503, runs once, and its keyed retry gets the 200', async (t) => {
  const cluster = await startRedisCluster(t);
  const dropper = new ReplyDropper();
  t.teardown(() => dropper.close());
  const fronts = [];
  for (const port of cluster.ports) {
    const front = await dropper.front(port);
    fronts.push(front);
    await run('redis-cli', ['-p', String(port), 'config', 'set', 'cluster-announce-port', String(front)]);
  }
  const wanted = [...fronts].sort().join();
  await waitFor('every node naming the proxies', async () => {
    const seen = await Promise.all(cluster.ports.map(announcedPorts));
    return seen.every((ports) => [...new Set(ports)].sort().join() === wanted);
  }, 15_000);

  const h = await startHarness(t, 'cluster-lost-reply', {
    ...LIVE_COUNTS, REDIS_CLUSTER_NODES: fronts.map((p) => `127.0.0.1:${p}`).join(','),
  });
  const lic = await h.createLicense({ totalQuota: 10 });
  const { accessToken, signToken } = await getTokenPair(h, lic);

  // no key: the client hears its answer is uncertain, not that its own token was used
  dropper.armed = claimsOf(signToken).token_id;
  const lost = await h.validate(signToken);
  t.equal(dropper.dropped, 1, 'the reply of the call carrying the token was kept back');
  t.same([lost.status, lost.body], [503, VALIDATE_503], 'the redemption whose reply was lost answers 503');
  t.same((await h.validate(signToken)).body, { success: false, message: MSG.USED }, 'it ran: the token is spent');
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.usedQuota, 1, 'one unit spent, once');

  // with a key: the retry gets the redemption's own 200
  const keyed = await signOne(h, accessToken);
  const key = { 'idempotency-key': 'lost-reply-1' };
  dropper.armed = claimsOf(keyed).token_id;
  const first = await h.request('POST', '/api/license/validate', { token: keyed }, key);
  t.equal(dropper.dropped, 2);
  t.same([first.status, first.body], [503, VALIDATE_503], 'the keyed redemption whose reply was lost answers 503');
  const retry = await h.request('POST', '/api/license/validate', { token: keyed }, key);
  t.equal(retry.status, 200, 'its retry with the key answers 200');
  t.equal(retry.body.usedQuota, 2, 'with the count of that one redemption');

  await h.drainWorker();
  t.equal(await h.postgresUsedQuota(lic.firmaId), 2, 'Postgres counts each redemption once');
  t.equal((await h.checkQuota(lic.licenseKey)).body.data.usedQuota, 2);
});
