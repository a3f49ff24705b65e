import { UsageError, type Invocation } from './args.js';

// Where licensectl finds the service and its admin token. The environment has been given
// .env.dev's settings already (src/cli/devEnv.ts), so in a `make run` checkout the server's
// own HOST, PORT and ADMIN_TOKEN are found with nothing set; in production the same
// variables come from the environment the server runs with.

export interface Connection {
  url: string;
  token: string;
}

/** The address a client reaches a server listening on `host` at: a wildcard address is reached on loopback. */
export function reachable(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** --url, else LICENSE_URL, else the server's own HOST and PORT (https when it serves TLS), else its defaults. */
export function serviceUrl(options: Invocation['options'], env: NodeJS.ProcessEnv): string {
  if (typeof options.url === 'string') return options.url;
  if (env.LICENSE_URL) return env.LICENSE_URL;
  const scheme = env.TLS_CERT_FILE ? 'https' : 'http';
  return `${scheme}://${reachable(env.HOST ?? '127.0.0.1')}:${env.PORT || '8080'}`;
}

/** The service and the token, or the UsageError saying what is missing. */
export function connectionOf(options: Invocation['options'], env: NodeJS.ProcessEnv): Connection {
  const url = serviceUrl(options, env);
  if (!/^https?:\/\/[^/]/i.test(url)) throw new UsageError(`--url must be an http:// or https:// address: "${url}"`);
  const token = typeof options.token === 'string' ? options.token : env.ADMIN_TOKEN ?? '';
  if (token === '') throw new UsageError('no admin token: give --token or set ADMIN_TOKEN (in a `make run` checkout, .env.dev has it)');
  return { url, token };
}
