import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './registry.js';

/** As src/routes/schemas.ts reads one (this layer is below the routes). */
const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,4096})[ \t]*$/i;

/**
 * Whether an Authorization header carries "Bearer <token>" (compared in constant time);
 * token null: /metrics is open. GET /metrics of the server and of the standalone worker.
 */
export function metricsAuthorizer(token: string | null): (authorization: string) => boolean {
  if (token === null) return () => true;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return (authorization) => {
    const given = BEARER.exec(authorization)?.[1];
    return given !== undefined && timingSafeEqual(digest(given), expected);
  };
}

/**
 * GET /metrics of the standalone usage worker (npm run worker, METRICS_PORT), which serves
 * nothing else: a plain node:http server, off the request path of any client.
 */
export async function serveMetrics(metrics: Metrics, host: string, port: number, token: string | null): Promise<{ port: number; close(): void }> {
  const authorized = metricsAuthorizer(token);
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    } else if (!authorized(req.headers.authorization ?? '')) {
      res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer realm="metrics"' }).end('unauthorized\n');
    } else {
      metrics.scrape().then(
        (text) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(text),
        () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics failed\n'),
      );
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}
