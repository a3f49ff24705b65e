import net from 'node:net';

// uWebSockets.js listens with SO_REUSEPORT, so the kernel lets a second server bind a port
// the first one serves, and spreads the connections over both, silently: the second
// service answers the first one's clients from its own Redis prefix and schema. Before
// its children bind, a service claims its port in two ways:
// - a lock named after the port in Linux's abstract socket namespace, which the kernel
//   drops with the process that holds it, however it ends. Two services starting at the
//   same moment (PORT=0: each asked the kernel for a free port, which hands out a port
//   again until something listens on it) cannot both take it;
// - a bind of the port without SO_REUSEPORT, which fails while anything listens on it.

/** The port is served or claimed by another process: the service refuses to start. */
export class PortTakenError extends Error {
  override name = 'PortTakenError';
}

/**
 * Claims `port` on `host` for this process's lifetime (its lock goes with the process);
 * PortTakenError when another process has it.
 */
export async function claimPort(host: string, port: number): Promise<number> {
  const lock = await takeLock(port);
  if (lock === 'taken') throw new PortTakenError(`port ${port} is claimed by another license service on this host`);
  try {
    if (!(await bindsAlone(host, port))) throw new PortTakenError(`port ${port} on ${host} is in use by another process`);
  } catch (err) {
    lock?.close();
    throw err;
  }
  return port;
}

/** PORT=0: a free port on `host` that no other service starting now claims (the kernel's pick). */
export async function claimFreePort(host: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await kernelPick(host);
    try {
      return await claimPort(host, port);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt >= 20) throw err;
    }
  }
}

/**
 * The abstract socket named after the port, listening (unref'd, so it never holds the
 * process open); 'taken' when another process holds it; null where abstract sockets do not
 * exist (not Linux): the bind check alone then.
 */
function takeLock(port: number): Promise<net.Server | 'taken' | null> {
  if (process.platform !== 'linux') return Promise.resolve(null);
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' ? 'taken' : null));
    server.listen(`\0license-service:port:${port}`, () => {
      server.unref();
      resolve(server);
    });
  });
}

/** Whether a listener without SO_REUSEPORT can bind host:port now (closed again at once). */
function bindsAlone(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function kernelPick(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
