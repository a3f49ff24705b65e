import { BlockList, isIP } from 'node:net';

// Which addresses and host names a webhook must never reach unless the operator allows
// private networks (WEBHOOK_ALLOW_PRIVATE_NETWORKS): this machine, the networks around it,
// cloud metadata services, and whatever is not ordinary unicast on the internet. Otherwise
// an admin could point a webhook at 127.0.0.1:6379 or 169.254.169.254 and read the service's
// view of its own network from the recorded delivery status.
//
// IPv4 is judged by a list of the special-purpose blocks (RFC 6890 and its registry) that
// are not reachable on the internet. IPv6 the other way round, failing closed: only global
// unicast (2000::/3) minus its special blocks passes, plus IPv4-mapped and NAT64 addresses,
// which are judged by the IPv4 address inside them. Anything that is not an IP address at
// all counts as internal.

/** [network, prefix length, what it is] */
const INTERNAL_IPV4: readonly (readonly [string, number, string])[] = [
  ['0.0.0.0', 8, '"this network": 0.0.0.0 reaches this machine'],
  ['10.0.0.0', 8, 'private (RFC 1918)'],
  ['100.64.0.0', 10, 'shared address space (CGNAT; Alibaba Cloud metadata 100.100.100.200)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (the metadata service of AWS, GCP, Azure, ... at 169.254.169.254)'],
  ['172.16.0.0', 12, 'private (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments (Oracle Cloud metadata 192.0.0.192)'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast (deprecated)'],
  ['192.168.0.0', 16, 'private (RFC 1918)'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved, and the broadcast address 255.255.255.255'],
  ['168.63.129.16', 32, 'Azure\'s platform endpoint (WireServer): public in form, reachable only from inside Azure'],
];

/** Inside 2000::/3 but not ordinary internet unicast. */
const SPECIAL_GLOBAL_IPV6: readonly (readonly [string, number, string])[] = [
  ['2001::', 23, 'IETF protocol assignments (Teredo among them)'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4 (deprecated): an IPv4 address inside'],
  ['3fff::', 20, 'documentation'],
];

/** IPv6 /96 prefixes that carry an IPv4 address in their last 32 bits (as text: prefix + dotted quad), judged by it. */
const IPV4_INSIDE_IPV6 = [['::ffff:', 'IPv4-mapped'], ['64:ff9b::', 'NAT64 (well-known prefix)']] as const;

const internal = new BlockList();
const reachableIpv6 = new BlockList();
for (const [network, prefix] of INTERNAL_IPV4) {
  internal.addSubnet(network, prefix, 'ipv4');
  for (const [v6] of IPV4_INSIDE_IPV6) internal.addSubnet(`${v6}${network}`, 96 + prefix, 'ipv6');
}
for (const [network, prefix] of SPECIAL_GLOBAL_IPV6) internal.addSubnet(network, prefix, 'ipv6');
reachableIpv6.addSubnet('2000::', 3, 'ipv6');
for (const [v6] of IPV4_INSIDE_IPV6) reachableIpv6.addSubnet(`${v6}0.0.0.0`, 96, 'ipv6');

/**
 * Whether an IP address (as DNS answers it, or a URL's host without brackets) is one a
 * webhook must not reach: loopback, private, CGNAT, link-local, unspecified, multicast,
 * broadcast, reserved, documentation, a metadata endpoint, or such an address inside an
 * IPv4-mapped or NAT64 IPv6 address. Not an IP address: true.
 */
export function isInternalAddress(address: string): boolean {
  switch (isIP(address)) {
    case 4:
      return internal.check(address, 'ipv4');
    case 6:
      // an address BlockList cannot read (a zone index) is in neither list: internal
      return internal.check(address, 'ipv6') || !reachableIpv6.check(address, 'ipv6');
    default:
      return true;
  }
}

/**
 * Host names that name this machine or a private network whatever DNS says now (RFC 6761
 * localhost, ICANN's private-use .internal, where metadata.google.internal lives, mDNS .local,
 * RFC 8375 home.arpa): refused without a look-up, so that one that does not resolve here
 * is still refused.
 */
const INTERNAL_NAME = /(^|\.)(localhost|internal|local|home\.arpa)$/;

/** Whether a host name (a URL's hostname: lower case, IDNA-encoded) is internal by its name alone. */
export function isInternalHostName(hostname: string): boolean {
  return INTERNAL_NAME.test(hostname.replace(/\.+$/, ''));
}

/** A URL's hostname as DNS or an address check reads it: no IPv6 brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}
