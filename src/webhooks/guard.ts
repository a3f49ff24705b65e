import { promises as dns, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { bareHost, isInternalAddress, isInternalHostName } from './targets.js';

// Where a webhook may go, checked twice: when an admin sets the URL (an early, clear 400)
// and when each delivery is sent, since what a name resolves to may change in between
// (DNS rebinding). At send time the check sits in the connection's own look-up, so the
// address connected to is the address checked: no second look-up between the two.

/** What the operator allows beyond public https receivers (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
export interface TargetPolicy {
  /** http:// URLs (the request, signed but not encrypted, carries the license key) */
  allowHttp: boolean;
  /** loopback, private, link-local, metadata... addresses and names (src/webhooks/targets.ts) */
  allowPrivateNetworks: boolean;
}

/** Why a target is refused: its scheme, or where it leads. Never more than that. */
export type Refusal = 'insecure' | 'internal';

/** What a delivery refused by the policy records: fixed words that say nothing of the target. */
export const REFUSED: Record<Refusal, string> = {
  insecure: 'refused: http:// not allowed',
  internal: 'refused: internal address',
};

/** Resolves a host name to every address it has now (family 0: both). */
export type Resolve = (hostname: string, family: number) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (hostname, family) => dns.lookup(hostname, { all: true, family });

/**
 * What can be told of a URL without a look-up: the scheme, an IP address as the host
 * (in any spelling: WHATWG URL has already turned 2130706433, 0x7f.1 and 127.1 into
 * 127.0.0.1, and ::ffff:127.0.0.1 into ::ffff:7f00:1), and names internal by themselves.
 * null: nothing against it so far (a host name still to be resolved).
 */
export function refusalOf(url: URL, policy: TargetPolicy): Refusal | null {
  if (url.protocol !== 'https:' && !policy.allowHttp) return 'insecure';
  if (policy.allowPrivateNetworks) return null;
  const host = bareHost(url.hostname);
  if (isIP(host) !== 0) return isInternalAddress(host) ? 'internal' : null;
  return isInternalHostName(host) ? 'internal' : null;
}

/** How long setting a URL waits for its name to resolve; past it the name counts as not resolving now. */
const SET_TIME_LOOKUP_MS = 2000;

/**
 * The check when an admin sets a webhook URL (already a valid http(s) URL): refusalOf,
 * then the host name resolved, refused if any address is internal. A name that does not
 * resolve now (or not within SET_TIME_LOOKUP_MS) is accepted: a receiver's DNS may come
 * later, and every delivery checks again.
 */
export async function webhookUrlRefusal(text: string, policy: TargetPolicy, resolve: Resolve = systemResolve): Promise<Refusal | null> {
  const url = new URL(text);
  const early = refusalOf(url, policy);
  if (early !== null || policy.allowPrivateNetworks) return early;
  const host = bareHost(url.hostname);
  if (isIP(host) !== 0) return null;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((done) => { timer = setTimeout(() => done(null), SET_TIME_LOOKUP_MS); });
  const addresses = await Promise.race([resolve(host, 0).catch(() => null), late]);
  clearTimeout(timer);
  return addresses !== null && addresses.some((a) => isInternalAddress(a.address)) ? 'internal' : null;
}

/** The error a guarded look-up fails the connection with: the target is refused, the attempt never connects. */
export class RefusedTarget extends Error {
  constructor(readonly refusal: Refusal) {
    super(REFUSED[refusal]);
  }
}

/**
 * A `lookup` for http(s).request: resolves with `resolve`, and unless private networks are
 * allowed fails with RefusedTarget when any address is internal (one internal answer among
 * public ones is enough to refuse: which one a connection would use is not ours to pick).
 * The socket connects only to the addresses it hands back. Node calls it for host names
 * only: an IP address as the host is refusalOf's.
 */
export function guardedLookup(policy: TargetPolicy, resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    resolve(hostname, family).then((addresses) => {
      const first = addresses[0];
      if (first === undefined) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      if (!policy.allowPrivateNetworks && addresses.some((a) => isInternalAddress(a.address))) return callback(new RefusedTarget('internal'), '', 0);
      if (options.all) return callback(null, addresses);
      return callback(null, first.address, first.family);
    }, (err: NodeJS.ErrnoException) => callback(err, '', 0));
  };
}
