import type { LookupAddress } from 'node:dns';
import fc from 'fast-check';
import t from 'tap';
import { expectInvalid } from '../helpers/admin.js';
import { FUZZ_SEED, runsFor } from '../helpers/fuzz.js';
import { LIVE_COUNTS, startHarness } from '../helpers/harness.js';
import { pollUntil } from '../helpers/wait.js';
import { outboxOf, QUICK_WEBHOOKS, setWebhook, startReceiver } from '../helpers/webhooks.js';
import { webhookUrlRefusal, type Resolve, type TargetPolicy } from '../../src/webhooks/guard.js';
import { sendWebhook } from '../../src/webhooks/send.js';
import { isInternalAddress } from '../../src/webhooks/targets.js';

// Where webhooks may go (docs/api.md#where-a-webhook-may-go): never to this machine, its networks or a cloud
// metadata service unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=1, never over http:// unless
// WEBHOOK_ALLOW_HTTP=1. The admin API refuses such a URL when it is set
// (test/routes/admin.webhook.test.ts); here the other half: a delivery checks again where
// the name leads now and connects only to what it checked, so a name that turned internal
// after it was set (DNS rebinding) gets no connection, and the failure recorded says
// nothing of what is there. The address check itself against generated addresses.

// ---- the address check, property-based ------------------------------------------------------

// What must be refused, written out here from the registries (RFC 6890, RFC 6761, RFC 4193,
// RFC 4291, RFC 6052), not read from the service's lists.
const INTERNAL_V4: [string, number][] = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4], ['168.63.129.16', 32],
];
const INTERNAL_V6: [string, number][] = [
  ['::', 128], ['::1', 128], ['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['100::', 64],
  ['64:ff9b:1::', 48], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['3fff::', 20], ['5f00::', 16],
];
/** Outside 2000::/3: neither global unicast nor an IPv4 address inside IPv6. */
const NOT_GLOBAL_V6: [string, number][] = [['4000::', 2], ['8000::', 1]];
/** IPv4-mapped and NAT64: judged by the IPv4 address inside (generated below on their own). */
const IPV4_INSIDE: [string, number][] = [['::ffff:0:0', 96], ['64:ff9b::', 96]];

const v4ToBig = (a: string) => a.split('.').reduce((n, part) => (n << 8n) | BigInt(part), 0n);
const bigToV4 = (n: bigint) => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
function v6ToBig(a: string): bigint {
  const [head = '', tail] = a.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail).length;
  const all = tail === undefined ? groups(head) : [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail)];
  return all.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
}
/** Eight groups, uncompressed: as valid as any other spelling. */
const bigToV6 = (n: bigint) => Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');

/** An address anywhere inside network/prefix. */
function inside(bits: number, network: bigint, prefix: number): fc.Arbitrary<bigint> {
  const hostBits = BigInt(bits - prefix);
  return fc.bigInt({ min: 0n, max: (1n << hostBits) - 1n }).map((host) => ((network >> hostBits) << hostBits) | host);
}
const inV4 = ([net, prefix]: [string, number]) => inside(32, v4ToBig(net), prefix);
const inV6 = ([net, prefix]: [string, number]) => inside(128, v6ToBig(net), prefix);
const isIn = (bits: number, n: bigint, network: bigint, prefix: number) => (n >> BigInt(bits - prefix)) === (network >> BigInt(bits - prefix));
const internalV4 = (n: bigint) => INTERNAL_V4.some(([net, prefix]) => isIn(32, n, v4ToBig(net), prefix));
const internalV6 = (n: bigint) => INTERNAL_V6.some(([net, prefix]) => isIn(128, n, v6ToBig(net), prefix));

const anyV4 = fc.bigInt({ min: 0n, max: (1n << 32n) - 1n });
const internalIpv4 = fc.oneof(...INTERNAL_V4.map(inV4));
const publicIpv4 = anyV4.filter((n) => !internalV4(n));
/** An IPv4 address inside IPv6, written either way (::ffff:10.1.2.3 or ::ffff:a01:203) */
const mapped = (v4: fc.Arbitrary<bigint>, prefix: string) => fc.tuple(v4, fc.boolean())
  .map(([n, dotted]) => (dotted ? `${prefix}${bigToV4(n)}` : bigToV6(v6ToBig(prefix.replace(/:$/, ':0:0')) | n)));

const internalAddresses = fc.oneof(
  internalIpv4.map(bigToV4),
  fc.oneof(...[...INTERNAL_V6, ...NOT_GLOBAL_V6].map(inV6)).map(bigToV6),
  inV6(['::', 3]).filter((n) => !IPV4_INSIDE.some(([net, prefix]) => isIn(128, n, v6ToBig(net), prefix))).map(bigToV6),
  mapped(internalIpv4, '::ffff:'),
  mapped(internalIpv4, '64:ff9b::'),
);
const publicAddresses = fc.oneof(
  publicIpv4.map(bigToV4),
  inV6(['2000::', 3]).filter((n) => !internalV6(n)).map(bigToV6),
  mapped(publicIpv4, '::ffff:'),
  mapped(publicIpv4, '64:ff9b::'),
);

t.test('the address check refuses every generated internal address and accepts public ones', async (t) => {
  await fc.assert(fc.property(internalAddresses, (a) => isInternalAddress(a)), { seed: FUZZ_SEED, numRuns: runsFor(20) });
  await fc.assert(fc.property(publicAddresses, (a) => !isInternalAddress(a)), { seed: FUZZ_SEED, numRuns: runsFor(20) });
  // the edges of each block, where an off-by-one prefix would show
  for (const [net, prefix] of INTERNAL_V4) {
    const first = v4ToBig(net);
    const last = first | ((1n << BigInt(32 - prefix)) - 1n);
    t.ok(isInternalAddress(bigToV4(first)) && isInternalAddress(bigToV4(last)), `${net}/${prefix}: first and last refused`);
    if (first > 0n && !internalV4(first - 1n)) t.notOk(isInternalAddress(bigToV4(first - 1n)), `${bigToV4(first - 1n)}, just below, accepted`);
    if (last < (1n << 32n) - 1n && !internalV4(last + 1n)) t.notOk(isInternalAddress(bigToV4(last + 1n)), `${bigToV4(last + 1n)}, just above, accepted`);
  }
  for (const a of ['::1', '::', '::ffff:127.0.0.1', '::ffff:7f00:1', 'fd00:ec2::254', 'fe80::1%eth0', 'FE80::1', 'not an address', '']) {
    t.ok(isInternalAddress(a), `${JSON.stringify(a)} refused`);
  }
  for (const a of ['8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808']) t.notOk(isInternalAddress(a), `${a} accepted`);
});

t.test('odd spellings of an IPv4 address are one address to WHATWG URL, which both checks read', async (t) => {
  for (const spelling of ['2130706433', '0x7f.1', '127.1', '0177.0.0.1', '0x7F000001', '%31%32%37.0.0.1', '１２７.０.０.１']) {
    t.equal(new URL(`https://${spelling}/`).hostname, '127.0.0.1', spelling);
  }
  t.equal(new URL('https://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]');
  t.equal(new URL('https://0/').hostname, '0.0.0.0');
});

// ---- a delivery checks its target again, in the connection's own look-up ---------------------

const SECRET = 'whsec-targets-0123456789abcdef';
const HTTP_ONLY: TargetPolicy = { allowHttp: true, allowPrivateNetworks: false };
const address = (a: string): LookupAddress => ({ address: a, family: a.includes(':') ? 6 : 4 });
/** A resolver whose nth call answers the nth list of addresses (the last one from then on), counting its calls. */
class Answering {
  calls = 0;
  private readonly answers: string[][];
  constructor(...answers: string[][]) {
    this.answers = answers;
  }

  readonly resolve: Resolve = async () => (this.answers[Math.min(this.calls++, this.answers.length - 1)] ?? []).map(address);
}
const answering = (...answers: string[][]) => new Answering(...answers);
const eventTo = (url: string) => ({
  eventKey: `test.targets:${url}`, id: '0f7e1a52-6d0b-4c59-8a57-1c2f3d4e5a6b', type: 'quota.low', payload: { n: 1 },
  createdAt: new Date(), attempt: 1, url, secret: SECRET,
});
const never = new AbortController().signal;

t.test('DNS rebinding: a name public when set and internal when sent gets no connection', async (t) => {
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  const url = `http://hooks.rebind.test:${port}/hook`;

  // public when the admin sets it, this machine when the worker sends
  const rebinding = answering(['93.184.216.34'], ['127.0.0.1']);
  t.equal(await webhookUrlRefusal(url, HTTP_ONLY, rebinding.resolve), null, 'accepted when set: it resolved to a public address');
  const attempt = await sendWebhook(eventTo(url), 2000, never, { policy: HTTP_ONLY, resolve: rebinding.resolve });
  t.same(attempt, { ok: false, status: null, error: 'refused: internal address', permanent: true }, 'refused at send time, for good, in fixed words');
  t.equal(rebinding.calls, 2, 'resolved again at send time');

  for (const answer of [['93.184.216.34', '127.0.0.1'], ['::ffff:127.0.0.1'], ['::1'], ['169.254.169.254'], ['fd00:ec2::254'], ['10.0.0.7']]) {
    const resolve = answering(answer);
    t.equal(await webhookUrlRefusal(url, HTTP_ONLY, resolve.resolve), 'internal', `set: ${answer.join(', ')} refused`);
    const sent = await sendWebhook(eventTo(url), 2000, never, { policy: HTTP_ONLY, resolve: resolve.resolve });
    t.same(sent, { ok: false, status: null, error: 'refused: internal address', permanent: true }, `sent: ${answer.join(', ')} refused alike`);
  }
  t.equal(receiver.connections, 0, 'no connection reached the receiver');
  t.equal(receiver.deliveries.length, 0, 'no request either');

  // the control: allowed, the same look-up is where the request goes (the name resolves nowhere else)
  const local = answering(['127.0.0.1']);
  const delivered = await sendWebhook(eventTo(url), 2000, never, { policy: { allowHttp: true, allowPrivateNetworks: true }, resolve: local.resolve });
  t.same(delivered, { ok: true, status: 200 }, 'with WEBHOOK_ALLOW_PRIVATE_NETWORKS the same answer is delivered to');
  t.equal(receiver.deliveries.length, 1);
  t.equal(receiver.deliveries[0]?.headers.host, `hooks.rebind.test:${port}`, 'to the name, connected at the address the look-up gave');
});

t.test('a delivery refused before any look-up: http:// when not allowed, an internal address or name as the host', async (t) => {
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  const unused = answering(['93.184.216.34']);
  const refusedAs: [string, TargetPolicy, string][] = [
    [`http://hooks.example.com:${port}/`, { allowHttp: false, allowPrivateNetworks: true }, 'refused: http:// not allowed'],
    [`${receiver.url}/hook`, { allowHttp: false, allowPrivateNetworks: false }, 'refused: http:// not allowed'],
    [`${receiver.url}/hook`, HTTP_ONLY, 'refused: internal address'],
    [`http://2130706433:${port}/`, HTTP_ONLY, 'refused: internal address'],
    [`http://[::ffff:127.0.0.1]:${port}/`, HTTP_ONLY, 'refused: internal address'],
    [`http://localhost:${port}/`, HTTP_ONLY, 'refused: internal address'],
    ['https://metadata.google.internal/computeMetadata/v1/', HTTP_ONLY, 'refused: internal address'],
  ];
  for (const [url, policy, error] of refusedAs) {
    t.same(await sendWebhook(eventTo(url), 2000, never, { policy, resolve: unused.resolve }), { ok: false, status: null, error, permanent: true }, url);
  }
  t.equal(unused.calls, 0, 'nothing was resolved');
  t.equal(receiver.connections, 0, 'no connection reached the receiver');
});

t.test('setting a URL: a name that does not resolve now is accepted (each delivery checks it), one that resolves internal is not', async (t) => {
  const url = 'https://hooks.example.com/license';
  const policy: TargetPolicy = { allowHttp: false, allowPrivateNetworks: false };
  const notFound: Resolve = async () => { throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }); };
  t.equal(await webhookUrlRefusal(url, policy, notFound), null, 'does not resolve: accepted');
  t.equal(await webhookUrlRefusal(url, policy, answering(['93.184.216.34', '2606:4700:4700::1111']).resolve), null, 'public addresses only: accepted');
  t.equal(await webhookUrlRefusal(url, policy, answering(['93.184.216.34', '192.168.0.10']).resolve), 'internal', 'one internal among them: refused');
  t.equal(await webhookUrlRefusal(url, { allowHttp: false, allowPrivateNetworks: true }, answering(['127.0.0.1']).resolve), null, 'allowed by the setting');
  t.equal(await webhookUrlRefusal('http://hooks.example.com/', policy, answering(['93.184.216.34']).resolve), 'insecure', 'http:// refused first');
  const silent: Resolve = () => new Promise(() => {});
  t.equal(await webhookUrlRefusal(url, policy, silent), null, 'a look-up that never answers: accepted once its wait is over, not held forever');
});

// ---- the worker: a refused target fails for good at once, recorded without detail ------------

t.test('the worker: a stored URL that leads inside fails at once, recorded as refused, and nothing reaches it', async (t) => {
  // http:// allowed (the receiver is plain HTTP), private networks not
  const h = await startHarness(t, 'webhooktargets', { ...LIVE_COUNTS, ...QUICK_WEBHOOKS, WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_MAX_ATTEMPTS: '5' });
  const receiver = await startReceiver(t);
  const lic = await h.createLicense({ totalQuota: 5 });
  const path = `/admin/v1/licenses/${lic.licenseKey}`;

  expectInvalid(t, await h.admin('PATCH', path, { webhookUrl: `${receiver.url}/hook`, webhookSecret: SECRET }), 'webhookUrl');
  await setWebhook(h, lic.licenseKey, 'http://hooks.example.com/hook', SECRET); // http:// is allowed here
  // the receiver's URL as a name resolving inside would leave it after the check: written past the admin API
  await h.sql`update licenses set webhook_url = ${`${receiver.url}/hook`} where license_key = ${lic.licenseKey}`;
  await h.sql`insert into webhook_events (event_key, firma_id, type, payload) values ('test.targets:1', ${lic.firmaId}, 'test.targets', '{}')`;

  const [row] = await pollUntil(() => outboxOf(h, lic.firmaId), (rows) => rows[0]?.failed_at != null);
  t.ok(row?.failed_at instanceof Date, 'failed for good');
  t.equal(row?.attempts, 1, 'after one attempt: no retry can make it allowed');
  t.equal(row?.last_status, null, 'no status: nothing answered');
  t.equal(row?.last_error, 'refused: internal address', 'fixed words, nothing of the target');
  t.equal(row?.delivered_at, null);
  t.equal(receiver.connections, 0, 'no connection reached the receiver');
});
