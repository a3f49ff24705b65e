import uWS from 'uWebSockets.js';
import { checkCertificate, createApp, type TlsFiles } from './tlsApp.js';

/** how long a listener replaced by a certificate reload keeps accepting beside the new one */
const RETIRE_LISTENER_AFTER_MS = 50;

type Handler = (res: uWS.HttpResponse, req: uWS.HttpRequest) => void;

/**
 * The one port of a process, served by one uWebSockets.js app, and the apps a certificate
 * reload replaced (they finish their open connections, and close with the server).
 */
export class Listener {
  #app: uWS.TemplatedApp;
  readonly #retired: uWS.TemplatedApp[] = [];
  #socket: uWS.us_listen_socket | null = null;
  #address: { host: string; port: number } | null = null;
  /** the listen socket a reload replaced, closed a moment later */
  #retiring: { socket: uWS.us_listen_socket | null; timer: NodeJS.Timeout; done: () => void } | null = null;

  constructor(private readonly tls: TlsFiles | null, private readonly handler: Handler) {
    if (tls) checkCertificate(tls);
    this.#app = createApp(tls);
    this.#app.any('/*', handler);
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#app.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`cannot listen on ${host}:${port}`));
          return;
        }
        this.#socket = socket;
        this.#address = { host, port: uWS.us_socket_local_port(socket) };
        resolve(this.#address.port);
      });
    });
  }

  /** no new connections; open ones go on */
  stopAccepting(): void {
    this.#retire();
    if (this.#socket) {
      uWS.us_listen_socket_close(this.#socket);
      this.#socket = null;
    }
  }

  /** See HttpServer.reloadTls. */
  reloadTls(): Promise<string | null> {
    const tls = this.tls;
    if (!tls || !this.#address || !this.#socket) return Promise.resolve(null);
    let fingerprint: string;
    try {
      fingerprint = checkCertificate(tls);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    const fresh = createApp(tls);
    fresh.any('/*', this.handler);
    const { host, port } = this.#address;
    return new Promise((resolve, reject) => {
      // the port is shared (SO_REUSEPORT): the new app listens beside the old one, then the
      // old one stops accepting. The kernel resets connections still queued on a closed
      // listener (unless net.ipv4.tcp_migrate_req is 1), so the old one first accepts, for a
      // few more turns of the loop, those that queued while the new context was built
      fresh.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`cannot listen again on ${host}:${port} with the new certificate`));
          return;
        }
        this.#retire();
        this.#retiring = {
          socket: this.#socket,
          timer: setTimeout(() => this.#retire(), RETIRE_LISTENER_AFTER_MS),
          done: () => resolve(fingerprint),
        };
        this.#socket = socket;
        this.#retired.push(this.#app);
        this.#app = fresh;
      });
    });
  }

  /** close every connection (idle keep-alive ones included) */
  close(): void {
    this.#retire();
    // present at run time since uWS v20.12, missing from this build's type definitions
    for (const a of [...this.#retired, this.#app]) (a as unknown as { close(): void }).close();
  }

  #retire(): void {
    const retiring = this.#retiring;
    if (!retiring) return;
    this.#retiring = null;
    clearTimeout(retiring.timer);
    if (retiring.socket) uWS.us_listen_socket_close(retiring.socket);
    retiring.done();
  }
}
