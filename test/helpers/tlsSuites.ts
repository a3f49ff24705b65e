import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';

// What a TLS server offers, seen with `openssl s_client` as testssl.sh sees it: the suite a
// handshake agrees on, and every TLS 1.2 suite this openssl knows tried one by one.

/** The suite `openssl s_client` with these options agrees on with the server; null: no handshake. */
export function handshake(port: number, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', ...args],
      { timeout: 10_000, encoding: 'utf8' }, (_err, stdout) => {
        const suite = /^New, [^,]+, Cipher is (\S+)$/m.exec(stdout)?.[1];
        resolve(suite === undefined || suite === '(NONE)' ? null : suite);
      });
    child.stdin?.end();
  });
}

/** Every TLS 1.2 suite this openssl knows, the weak ones included (@SECLEVEL=0). */
export function knownTls12Suites(): string[] {
  return execFileSync('openssl', ['ciphers', 'ALL:COMPLEMENTOFALL:@SECLEVEL=0'], { encoding: 'utf8' })
    .trim().split(':').filter((c) => !c.startsWith('TLS_'));
}

/** The TLS 1.2 suites the server accepts when a client offers nothing else, sorted. */
export async function acceptedTls12Suites(port: number, known: string[] = knownTls12Suites()): Promise<string[]> {
  const accepted: string[] = [];
  for (let i = 0; i < known.length; i += 8) {
    const batch = known.slice(i, i + 8);
    const got = await Promise.all(batch.map((c) => handshake(port, ['-tls1_2', '-cipher', `${c}:@SECLEVEL=0`])));
    batch.forEach((c, j) => { if (got[j] === c) accepted.push(c); });
  }
  return accepted.sort();
}

/** A self-signed RSA certificate for localhost in `dir`. */
export function selfSignedCertificate(dir: string): { certFile: string; keyFile: string } {
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
    '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
  return { certFile, keyFile };
}
