import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import uWS from 'uWebSockets.js';

/**
 * The TLS 1.2 suites offered: Mozilla's "intermediate" profile without its DHE suites (no
 * DH parameters are configured, so they could not be negotiated): forward-secret AEAD only,
 * no static RSA key exchange, CBC, SHA-1 or 3DES. TLS 1.3's suites are all AEAD and stay as
 * OpenSSL sets them; the build refuses TLS 1.0 and 1.1 by itself. The order is the
 * client's (uWebSockets.js has no option for the server's), which the profile allows since
 * every suite offered is strong.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/**
 * Reads the certificate and key as OpenSSL will, and throws a message naming the problem:
 * uWebSockets.js only prints to stderr and then serves nothing when it cannot use them.
 * Returns the certificate's SHA-256 fingerprint, for the log.
 */
export function checkCertificate(tls: TlsFiles): string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(tls.certFile));
  } catch (err) {
    throw new Error(`TLS_CERT_FILE ${tls.certFile}: not a readable PEM certificate (${(err as Error).message})`, { cause: err });
  }
  let key;
  try {
    key = createPrivateKey(readFileSync(tls.keyFile));
  } catch (err) {
    throw new Error(`TLS_KEY_FILE ${tls.keyFile}: not a readable PEM private key (${(err as Error).message})`, { cause: err });
  }
  if (!cert.checkPrivateKey(key)) throw new Error(`TLS_KEY_FILE ${tls.keyFile} is not the key of TLS_CERT_FILE ${tls.certFile}`);
  return cert.fingerprint256;
}

/** An app serving plain HTTP, or HTTPS with the files as they are now. */
export function createApp(tls: TlsFiles | null): uWS.TemplatedApp {
  return tls
    ? uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile, ssl_ciphers: TLS12_CIPHERS })
    : uWS.App();
}
