import { randomUUID } from 'node:crypto';
import { LicenseClient, VALIDATE_MESSAGES } from '@license-service/client';
import t from 'tap';
import { startHarness } from '../helpers/harness.js';
import type { OpenApi } from '../helpers/openapi.js';
import { countingFetch, rejection } from '../helpers/sdk.js';

// Every public operation of GET /openapi.json has a method of LicenseClient, and every method
// of LicenseClient calls an operation of it: the table below names, for each public method,
// the operation it sends ("METHOD /path" as the document spells it) and a call of it. The
// table's type is keyed by LicenseClient's public members, so a method without a row does not
// compile; a public operation without a method, or a row whose operation the document lacks,
// fails here by name. Each call is then sent, and what the SDK put on the wire must be its
// operation. The codes the SDK gives the Turkish messages of validate, sign and release
// (VALIDATE_MESSAGES) are checked against every refusal the document lists for them.

const h = await startHarness(t, 'sdk-operations');
const doc = (await h.request('GET', '/openapi.json')).body as OpenApi;

const KEY = randomUUID();
const TOKEN = 'a.b.c';

type Row = { operation: string; call: (sdk: LicenseClient) => Promise<unknown> };

const SDK_OPERATIONS: { [Method in keyof LicenseClient]: Row } = {
  getToken: { operation: 'POST /api/v1/auth/get-token', call: (sdk) => sdk.getToken({ licenseKey: KEY, password: 'x', imzaTipi: 0 }) },
  validateLicense: { operation: 'POST /api/license/validate', call: (sdk) => sdk.validateLicense({ licenseKey: KEY, password: 'x' }) },
  signToken: { operation: 'POST /api/v1/auth/sign-token', call: (sdk) => sdk.signToken(TOKEN, { imzaTipi: 0 }) },
  validate: { operation: 'POST /api/license/validate', call: (sdk) => sdk.validate({ token: TOKEN }) },
  sign: { operation: 'POST /api/signature/sign', call: (sdk) => sdk.sign({ token: TOKEN, documents: [{ name: 'a.xml', sha256: '0'.repeat(64) }] }) },
  release: { operation: 'POST /api/license/release', call: (sdk) => sdk.release({ token: TOKEN }) },
  checkQuota: { operation: 'GET /api/license/check-quota/{licenseKey}', call: (sdk) => sdk.checkQuota(KEY) },
  historyPage: { operation: 'GET /api/license/history/{licenseKey}', call: (sdk) => sdk.historyPage(KEY, TOKEN) },
  historyPages: { operation: 'GET /api/license/history/{licenseKey}', call: (sdk) => sdk.historyPages(KEY, TOKEN).next() },
  history: { operation: 'GET /api/license/history/{licenseKey}', call: (sdk) => sdk.history(KEY, TOKEN).next() },
  ledger: { operation: 'GET /api/license/ledger/{licenseKey}', call: (sdk) => sdk.ledger(KEY, TOKEN) },
  jwks: { operation: 'GET /.well-known/jwks.json', call: (sdk) => sdk.jwks() },
};

/**
 * Tags of operations no application calls through the SDK: the service's probes and metrics,
 * the dashboard's page and files, the API's documentation. A tag not named here nor public
 * fails the test: a new kind of operation needs a decision.
 */
const NOT_FOR_THE_SDK = new Set(['operations', 'dashboard', 'documentation']);

const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({
  name: `${method.toUpperCase()} ${path}`, method, path, tags: op.tags,
})));

/** Whether "METHOD /path?query" as sent is the operation "METHOD /path/{param}" (paths match case-insensitively, as the router does). */
function sends(sent: string, operation: string): boolean {
  const [method, template] = operation.split(' ') as [string, string];
  const pattern = new RegExp(`^${method} ${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/?]+')}(\\?.*)?$`, 'i');
  return pattern.test(sent);
}

t.test('every public operation of /openapi.json has an SDK method, and every SDK method an operation of it', async (t) => {
  // OPTIONS is the browser's preflight, which no client sends by itself
  const publicOps = operations.filter((op) => op.method !== 'options' && op.tags.includes('public')).map((op) => op.name);
  const covered = new Set(Object.values(SDK_OPERATIONS).map((row: Row) => row.operation));
  t.ok(publicOps.length >= 9, `the document's public operations (${publicOps.length})`);
  t.strictSame(publicOps.filter((op) => !covered.has(op)), [], 'public operations without an SDK method (add it to LicenseClient and this table)');
  t.strictSame([...covered].filter((op) => !publicOps.includes(op)), [], 'SDK methods whose operation is not a public one of the document');
  const others = operations.filter((op) => !op.tags.includes('public'));
  t.strictSame(others.filter((op) => !op.tags.some((tag) => NOT_FOR_THE_SDK.has(tag))).map((op) => `${op.name} ${op.tags.join(',')}`), [],
    'every other operation is one the SDK leaves out by its tag');
  for (const method of Object.keys(SDK_OPERATIONS)) {
    t.equal(typeof (LicenseClient.prototype as unknown as Record<string, unknown>)[method], 'function', `LicenseClient.${method} is a method`);
  }
});

t.test('each SDK method sends its operation', async (t) => {
  for (const [method, row] of Object.entries(SDK_OPERATIONS) as [string, Row][]) {
    const counter = countingFetch();
    await rejection(row.call(new LicenseClient({ baseUrl: h.url, fetch: counter.fetch, retry: { maxAttempts: 1 } })));
    t.equal(counter.sent.length, 1, `${method}: one request`);
    t.ok(counter.sent[0] !== undefined && sends(counter.sent[0], row.operation), `${method}: ${counter.sent[0]} is ${row.operation}`);
  }
});

t.test('every refusal the document lists for validate, sign and release has an SDK code', async (t) => {
  const codes = new Map(Object.entries(VALIDATE_MESSAGES));
  for (const path of ['/api/license/validate', '/api/signature/sign', '/api/license/release']) {
    const responses = doc.paths[path]?.post?.responses ?? {};
    const messages = new Set<string>();
    for (const [status, response] of Object.entries(responses)) {
      if (status.startsWith('2') || !('content' in response)) continue;
      for (const media of Object.values(response.content ?? {})) {
        for (const example of Object.values(media.examples ?? {})) {
          const message = (example.value as { message?: unknown; error?: unknown }).message;
          // license validation shares validate's path: its refusals carry their own codes
          if (typeof message === 'string') messages.add(message);
        }
      }
    }
    t.ok(messages.size >= 5, `${path}: the document lists its refusals (${messages.size})`);
    const unnamed = [...messages].filter((m) => !codes.has(m) && !m.startsWith('Geçersiz istek: '));
    t.strictSame(unnamed, [], `${path}: every message has a code in VALIDATE_MESSAGES`);
  }
});
