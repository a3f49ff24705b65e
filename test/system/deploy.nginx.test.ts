import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import { frontSite, nginxBinary } from '../helpers/nginxFront.js';
import { exitOf, freeLoopbackPort } from '../helpers/processes.js';
import { rawExchange } from '../helpers/rawHttp.js';
import { selfSignedCertificate } from '../helpers/tlsSuites.js';
import { waitFor } from '../helpers/wait.js';

// The front installed as docs/deployment.md says, into Debian's own nginx configuration (a
// copy of this machine's /etc/nginx, its paths moved into a directory of the test's): its
// default site is port 80's default server too, so nginx refuses the pair until the
// document's step removes it; then a load balancer's health check by IP, whatever its Host,
// reaches the service instead of Debian's welcome page.

const run = promisify(execFile);
const DEPLOYMENT = readFileSync(fileURLToPath(new URL('../../../docs/deployment.md', import.meta.url)), 'utf8');

t.test('deploy/nginx inside Debian\'s nginx configuration', async (t) => {
  const binary = nginxBinary();
  if (binary === null) throw new Error('nginx is not installed (make test installs it: apt-get install -y nginx)');
  const h = await startHarness(t, 'deploy-nginx', { TRUST_PROXY: '1' });
  const dir = mkdtempSync(path.join(tmpdir(), 'lic-debian-nginx-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const etc = path.join(dir, 'etc-nginx');
  cpSync('/etc/nginx', etc, { recursive: true, dereference: true });
  const [httpPort, tlsPort] = [await freeLoopbackPort(), await freeLoopbackPort()];

  // Debian's files, each absolute path moved into `dir`, port 80 on a free loopback port
  const moved = (text: string) => text.replaceAll('/etc/nginx/', `${etc}/`).replaceAll('/var/log/nginx/', `${dir}/`)
    .replace('/run/nginx.pid', `${dir}/nginx.pid`)
    .replace(/^user www-data;$/m, process.getuid?.() === 0 ? 'user root;' : '')
    .replace(/^http \{$/m, `http {\n\tclient_body_temp_path ${dir}/body;\n\tproxy_temp_path ${dir}/proxy;\n\tfastcgi_temp_path ${dir}/fastcgi;\n` +
      `\tuwsgi_temp_path ${dir}/uwsgi;\n\tscgi_temp_path ${dir}/scgi;`);
  const mainConf = path.join(etc, 'nginx.conf');
  writeFileSync(mainConf, moved(readFileSync(mainConf, 'utf8')));
  const defaultSite = path.join(etc, 'sites-enabled', 'default');
  t.same(readdirSync(path.join(etc, 'sites-enabled')), ['default'], 'Debian enables its default site');
  const debianDefault = readFileSync(defaultSite, 'utf8');
  t.match(debianDefault, /^\s*listen 80 default_server;$/m, 'which is port 80\'s default server');
  writeFileSync(defaultSite, debianDefault.replace(/^\s*listen 80 default_server;$/m, `\tlisten 127.0.0.1:${httpPort} default_server;`)
    .replace(/^\s*listen \[::\]:80 default_server;$/m, ''));

  // docs/deployment.md, step "nginx and a certificate": the site into conf.d, its EDIT lines
  const { certFile, keyFile } = selfSignedCertificate(dir);
  writeFileSync(path.join(etc, 'conf.d', 'license-service.conf'),
    frontSite({ servicePort: h.service.port, tlsPort, httpPort, certFile, keyFile, cacheDir: path.join(dir, 'cache') }));
  const nginx = (args: string[]) => run(binary, ['-c', mainConf, '-e', path.join(dir, 'error.log'), ...args]);

  const refused = await nginx(['-t']).then(() => null, (err: { stderr?: string }) => err.stderr ?? '');
  t.match(refused, /duplicate default server/, 'with Debian\'s default site, nginx -t refuses the pair');

  t.match(DEPLOYMENT, /^\s*sudo rm -f \/etc\/nginx\/sites-enabled\/default$/m, 'the document removes the default site');
  unlinkSync(defaultSite);
  const tested = await nginx(['-t']);
  t.match(tested.stderr, /test is successful/, 'then nginx -t passes');

  const child = spawn(binary, ['-c', mainConf, '-e', path.join(dir, 'error.log'), '-g', 'daemon off;'], { stdio: 'ignore' });
  t.teardown(async () => {
    child.kill('SIGTERM');
    if ((await exitOf(child, 5000)).timedOut) child.kill('SIGKILL');
  });
  await waitFor('nginx answering on port 80', async () =>
    (await rawExchange(httpPort, 'GET /healthz HTTP/1.0\r\n\r\n', { answers: 1 }).catch(() => null))?.answers.length === 1, 10_000);

  for (const host of ['192.0.2.10', 'license.example.com', 'anything.invalid']) {
    const got = await rawExchange(httpPort, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, { answers: 1 });
    t.equal(got.answers[0]?.status, 200, `health check with Host ${host}`);
    t.match(got.answers[0]?.body, { success: true, redis: 'ok', postgres: 'ok' }, 'the service\'s answer');
  }
  const bare = await rawExchange(httpPort, 'GET /readyz HTTP/1.0\r\n\r\n', { answers: 1 });
  t.match([bare.answers[0]?.status, bare.answers[0]?.body], [200, { success: true }], 'HTTP/1.0 without a Host');
  const https = await rawExchange(tlsPort, 'GET /healthz HTTP/1.1\r\nHost: 192.0.2.10\r\nConnection: close\r\n\r\n', { tls: true, answers: 1 });
  t.equal(https.answers[0]?.status, 200, 'and over HTTPS, by IP');
});
