import type { Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { ADMIN_TOKEN, createLicense, testEnv, testStorage, type LicenseInput, type Teardown, type TestLicense } from './harness.js';
import { freshConnectionClient, type Answer, type Client } from './http.js';
import { bearer } from './jwt.js';
import { checkedClient, Documented, Documents, type CheckedClient, type HeaderExpectation, type OpenApi } from './openapi.js';
import { DEFAULT_WORKERS, spawnServer, type ServerProcess } from './processes.js';

// The contract tests (test/system/openapi.contract.*.test.ts): the service as `npm start`
// runs it (node dist/src/cli/server.js, WORKERS unset so one process per core serves the
// one port, every other setting at its default unless a test says otherwise), its
// /openapi.json and /admin/openapi.json (when it serves the admin API), and a client that
// opens a connection per request (so requests reach every process) and holds each answer to
// the document of its path: status, body, headers.

type Tap = Test;

export interface Contract {
  server: ServerProcess;
  /** the server's environment (WORKERS unset) */
  env: Record<string, string>;
  /** the paths of both documents (with the public one's components), to list operations by */
  doc: OpenApi;
  /** GET /admin/openapi.json, null when the instance serves no admin API (and answers it 404) */
  adminDoc: OpenApi | null;
  documented: Documents;
  /** every answer checked against the document */
  c: CheckedClient;
  /** why answers differed from the document, so far */
  mismatches: string[];
  /** one request through `c`, its status asserted (a scenario that drifts from its purpose fails here, not as an unseen status) */
  expect(t: Tap, status: number, what: string, res: Promise<Answer> | ((c: Client) => Promise<Answer>), headers?: HeaderExpectation): Promise<Answer>;
  admin(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  license(input?: LicenseInput): Promise<TestLicense>;
  /**
   * Sends until a rate limit answers 429 (its window may roll over once on the way, so at
   * most twice the limit and one), each answer before it `status`; resolves with the 429.
   */
  untilLimited(t: Tap, what: string, send: (c: Client) => Promise<Answer>, status: number, limit: number): Promise<Answer>;
  /**
   * Asserts that no answer differed from the document and that every documented status of
   * the operations `covers` accepts ("post /path 200") was answered by a real request here.
   */
  finish(t: Tap, covers: (operation: string) => boolean): void;
}

/** Starts the server with `env` over the defaults, reads its document, and registers the cleanup. */
export async function startContract(t: Teardown, label: string, env: Record<string, string> = {}): Promise<Contract> {
  const full = { ...testEnv(label, { LOG_LEVEL: 'info', ...env }), WORKERS: DEFAULT_WORKERS };
  const forConfig: Record<string, string> = { ...full };
  delete forConfig.WORKERS; // "default" to spawnServer: unset
  testStorage(t, loadConfig(forConfig));
  const server = await spawnServer(t, full);
  const raw = freshConnectionClient(server.url);
  const publicDoc = (await raw.request('GET', '/openapi.json')).body as OpenApi;
  const admin = await raw.request('GET', '/admin/openapi.json');
  const adminDoc = admin.status === 200 ? admin.body as OpenApi : null;
  const documented = new Documents(new Documented(publicDoc), adminDoc && new Documented(adminDoc));
  const doc: OpenApi = { ...publicDoc, paths: documented.paths };
  const mismatches: string[] = [];
  const c = checkedClient(raw, documented, mismatches);
  return {
    server, env: forConfig, doc, adminDoc, documented, c, mismatches,
    async expect(tap, status, what, res, headers) {
      const r = await (typeof res === 'function' ? res(headers ? c.expecting(headers) : c) : res);
      tap.equal(r.status, status, `${what}: ${r.status} ${r.text.slice(0, 200)}`);
      return r;
    },
    admin: (method, path, body, headers = {}) => c.request(method, path, body, { ...bearer(ADMIN_TOKEN), ...headers }),
    license: (input = {}) => createLicense(c, input),
    async untilLimited(tap, what, send, status, limit) {
      for (let i = 0; i <= 2 * limit; i++) {
        const r = await send(c.expecting({ rateLimit: true }));
        if (r.status === 429) return r;
        if (r.status !== status) tap.equal(r.status, status, `${what}, before the limit: ${r.text.slice(0, 200)}`);
      }
      throw new Error(`${what}: no 429 after ${2 * limit + 1} requests`);
    },
    finish(tap, covers) {
      tap.same(mismatches, [], 'no answer differs from the document');
      const seen = documented.seen;
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (!covers(`${method} ${path}`)) continue;
          for (const status of Object.keys(op.responses)) {
            if (!covers(`${method} ${path} ${status}`)) continue;
            tap.ok(seen.has(`${method} ${path} ${status}`), `${method.toUpperCase()} ${path} ${status} was answered by a real request here`);
          }
        }
      }
    },
  };
}
