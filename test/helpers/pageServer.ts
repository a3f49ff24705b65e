import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A plain HTTP server on a loopback port for the browser tests' own pages: another origin
// than the service, as a customer's web application is.

export interface PageServer {
  port: number;
  /** http://127.0.0.1:<port> */
  origin: string;
  close(): Promise<void>;
}

export async function servePages(handler: http.RequestListener): Promise<PageServer> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
