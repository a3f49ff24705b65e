import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './harness.js';
import { freeLoopbackPort, exitOf } from './processes.js';
import { selfSignedCertificate } from './tlsSuites.js';
import { waitFor } from './wait.js';

// The real nginx (Debian's), running the front the repository ships in deploy/nginx, in a
// directory of its own: only what cannot be the same on a test machine is changed (ports,
// certificate, the upstream's port), and each change must find its line exactly once, so a
// test of an edited config fails instead of testing something else. The front bench
// (bench/load/front.ts) starts it through startNginx, without tap, and may ask for one
// listen more (plainApi) and a CPU set.

/** deploy/nginx/license-service.conf of this checkout (dist/test/helpers -> repository root). */
export const NGINX_SITE = fileURLToPath(new URL('../../../deploy/nginx/license-service.conf', import.meta.url));

export interface NginxFront {
  /** the HTTPS port (the config's 443) */
  tlsPort: number;
  /** the plain-HTTP port (the config's 80: health checks and the redirect) */
  httpPort: number;
  /**
   * with the option plainApi: a plain-HTTP port of the HTTPS server itself (its locations,
   * no TLS), which the shipped config does not have: to tell TLS's cost from the proxy's
   */
  plainApiPort: number | null;
  /** the certificate nginx presents (self-signed, CN=localhost) */
  certFile: string;
  /** what nginx wrote to its error log so far */
  errorLog(): string;
}

export interface NginxFrontOptions {
  /**
   * geo lines that replace the config's 127.0.0.0/8 one, e.g. "127.0.0.2/32 internal;
   * 127.0.0.6/32 admin;" (the tests' 127.0.0.1 then plays a client from outside)
   */
  geo?: string;
  /** a taskset CPU list for nginx and its workers (a bench pins it; tests leave it free) */
  cpu?: string;
  /** also listen on plainApiPort (see NginxFront) */
  plainApi?: boolean;
}

/** Replaces the one occurrence of `from` in `text`; throws when there is none or several. */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`deploy/nginx config: expected exactly one "${from}"`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

export interface SitePlaces {
  servicePort: number;
  tlsPort: number;
  httpPort: number;
  plainApiPort?: number | null;
  certFile: string;
  keyFile: string;
  /** the JWKS cache's directory */
  cacheDir: string;
  /** see NginxFrontOptions.geo */
  geo?: string;
}

/** deploy/nginx's site with the places a test machine gives it, as an operator edits the lines marked EDIT. */
export function frontSite(places: SitePlaces): string {
  const { servicePort, tlsPort, httpPort, plainApiPort = null } = places;
  let site = readFileSync(NGINX_SITE, 'utf8');
  site = replaceOnce(site, 'server 127.0.0.1:8080 ', `server 127.0.0.1:${servicePort} `);
  site = replaceOnce(site, 'listen 443 ssl http2;', `listen 127.0.0.1:${tlsPort} ssl http2;` +
    (plainApiPort === null ? '' : `\n    listen 127.0.0.1:${plainApiPort};`));
  site = replaceOnce(site, 'listen [::]:443 ssl http2;', '');
  // the bench's plain port serves the API as HTTPS does: only the real port 80 is sent to HTTPS
  if (plainApiPort !== null) {
    site = replaceOnce(site, 'if ($license_to_https) {',
      `set $license_redirect "$license_to_https:$server_port";\n    if ($license_redirect = "1:${httpPort}") {`);
  }
  site = replaceOnce(site, 'listen 80 default_server;', `listen 127.0.0.1:${httpPort} default_server;`);
  site = replaceOnce(site, 'listen [::]:80 default_server;', '');
  site = replaceOnce(site, '/var/lib/nginx/license-service-cache ', `${places.cacheDir} `);
  site = replaceOnce(site, '/etc/ssl/license-service/fullchain.pem', places.certFile);
  site = replaceOnce(site, '/etc/ssl/license-service/privkey.pem', places.keyFile);
  if (places.geo !== undefined) site = replaceOnce(site, '127.0.0.0/8 internal;', places.geo);
  return site;
}

/** nginx's binary, or null when it is not installed (make test installs it). */
export function nginxBinary(): string | null {
  for (const candidate of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' });
      return candidate;
    } catch { /* next */ }
  }
  return null;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/** A front started by startNginx: the ports, and how to stop it. */
export interface RunningNginx extends NginxFront {
  /** nginx's master process (its workers are its children) */
  pid: number;
  /** SIGTERM, SIGKILL after 5 s, then its directory removed */
  stop(): Promise<void>;
  /** SIGTERM without waiting, directory removed: for exit handlers, which cannot wait */
  stopNow(): void;
}

/**
 * Starts nginx with deploy/nginx's site in front of the service on `servicePort`, in a
 * directory of its own, and waits until it accepts on its ports. The caller stops it
 * (startNginxFront ties that to a test's teardown; the front bench stops it itself).
 */
export async function startNginx(servicePort: number, options: NginxFrontOptions = {}): Promise<RunningNginx> {
  const binary = nginxBinary();
  if (binary === null) throw new Error('nginx is not installed (make test installs it: apt-get install -y nginx)');
  const dir = mkdtempSync(path.join(tmpdir(), 'lic-nginx-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  try {
    const { certFile, keyFile } = selfSignedCertificate(dir);
    const [tlsPort, httpPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
    const plainApiPort = options.plainApi ? await freeLoopbackPort() : null;

    const site = frontSite({ servicePort, tlsPort, httpPort, plainApiPort, certFile, keyFile, cacheDir: path.join(dir, 'cache'), geo: options.geo });
    writeFileSync(path.join(dir, 'license-service.conf'), site);

    // the parts of Debian's /etc/nginx/nginx.conf a front needs, with every path in `dir`
    const main = `
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/license-service.conf;
}
`;
    writeFileSync(path.join(dir, 'nginx.conf'), main);
    const conf = path.join(dir, 'nginx.conf');
    execFileSync(binary, ['-t', '-q', '-c', conf, '-p', dir, '-e', path.join(dir, 'error.log')], { stdio: 'pipe' });
    const argv = [binary, '-c', conf, '-p', dir, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'];
    // taskset execs nginx in its own place (the pid is nginx's); its workers inherit the CPU set
    const child = options.cpu === undefined
      ? spawn(argv[0] as string, argv.slice(1), { stdio: 'ignore' })
      : spawn('taskset', ['-c', options.cpu, ...argv], { stdio: 'ignore' });
    const running = () => child.exitCode === null && child.signalCode === null;
    const stopNow = () => {
      if (running()) child.kill('SIGTERM');
      removeDir();
    };
    const stop = async () => {
      if (running()) {
        child.kill('SIGTERM');
        const exit = await exitOf(child, 5000);
        if (exit.timedOut) child.kill('SIGKILL');
      }
      removeDir();
    };
    try {
      const ports = [tlsPort, httpPort, ...(plainApiPort === null ? [] : [plainApiPort])];
      await waitFor('nginx accepting', async () => {
        for (const port of ports) if (!(await accepts(port))) return false;
        return true;
      }, 10_000);
    } catch (err) {
      await stop();
      throw err;
    }
    return {
      tlsPort, httpPort, plainApiPort, certFile, pid: child.pid as number, stop, stopNow,
      errorLog: () => { try { return readFileSync(path.join(dir, 'error.log'), 'utf8'); } catch { return ''; } },
    };
  } catch (err) {
    removeDir();
    throw err;
  }
}

/** Starts nginx with deploy/nginx's site in front of the service on `servicePort`; stopped at teardown. */
export async function startNginxFront(t: Teardown, servicePort: number, options: NginxFrontOptions = {}): Promise<NginxFront> {
  const front = await startNginx(servicePort, options);
  t.teardown(() => front.stop());
  return front;
}
