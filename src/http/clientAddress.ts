import { isIP } from 'node:net';

/**
 * The client's address: the peer's, or with TRUST_PROXY = n the address that the n-th
 * trusted proxy saw (X-Forwarded-For read from the right). Entries that are not an IP
 * address stop the walk: what lies beyond them cannot be trusted.
 */
export function clientAddress(peer: string, forwardedFor: string, trustedHops: number): string {
  if (trustedHops === 0 || forwardedFor === '') return peer;
  const hops = forwardedFor.split(',');
  let address = peer;
  for (let i = hops.length - 1, n = 0; i >= 0 && n < trustedHops; i--, n++) {
    const hop = (hops[i] as string).trim();
    if (isIP(hop) === 0) break;
    address = hop;
  }
  return address;
}

/**
 * The peer's address as uWebSockets.js gives it in binary (getRemoteAddress: 4 bytes on an
 * IPv4 socket, 16 on an IPv6 one), as text: dotted for IPv4, also when it reaches a
 * dual-stack socket (HOST=::) as IPv4-mapped IPv6; IPv6 in RFC 5952's short form. Read as
 * text, uWebSockets.js wrote every IPv4 client of a dual-stack socket as
 * 0000:...:ffff:7f00:0001, one IPv6 /64 for all of them, and took 0.5 µs more a request.
 */
export function peerAddressText(binary: ArrayBuffer): string {
  const b = new Uint8Array(binary);
  if (b.length === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  if (b.length !== 16) return '';
  let mapped = b[10] === 0xff && b[11] === 0xff;
  for (let i = 0; i < 10 && mapped; i++) mapped = b[i] === 0;
  if (mapped) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] as number) << 8) | (b[i + 1] as number));
  // the longest run of two or more zero groups (the first of equals) becomes "::"
  let runAt = -1;
  let runLength = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > runLength) {
      runAt = i;
      runLength = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = (from: number, to: number) => groups.slice(from, to).map((g) => g.toString(16)).join(':');
  return runAt < 0 ? hex(0, 8) : `${hex(0, runAt)}::${hex(runAt + runLength, 8)}`;
}

/** The part of uWebSockets.js's request that the header lines are read through. */
interface HeaderLines {
  forEach(cb: (lowerCaseName: string, value: string) => void): void;
}

/**
 * Every X-Forwarded-For line of a request, joined in order as one list (RFC 9110 5.3): a
 * proxy such as HAProxy adds a line of its own after the client's, and reading only the
 * first line would let the client's claim decide the address. An empty line keeps its
 * place as an empty entry, which stops the walk like any entry that is not an address.
 */
export function forwardedFor(req: HeaderLines): string {
  let joined: string | null = null;
  req.forEach((name, value) => {
    if (name === 'x-forwarded-for') joined = joined === null ? value : `${joined},${value}`;
  });
  return joined ?? '';
}

/**
 * What one client is, for per-address limits: an IPv4 address, or the /64 network of an
 * IPv6 one (one host is usually given a whole /64). IPv4-mapped IPv6 counts as IPv4.
 */
export function addressBucket(address: string): string {
  // IPv4 first: every request of an IPv4 client passes here, and no colon, no IPv6 form
  if (!address.includes(':')) return address;
  const mapped = /^(?:0{1,4}:){5}ffff:(\d+\.\d+\.\d+\.\d+)$|^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return (mapped[1] ?? mapped[2]) as string;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  // IPv4-mapped written in hex (::ffff:c000:201): else every IPv4 client would share 0:0:0:0::/64
  if (groups.length === 8 && groups.slice(0, 5).every((g) => /^0{1,4}$/.test(g)) && groups[5] === 'ffff'
    && /^[0-9a-f]{1,4}$/.test(groups[6] as string) && /^[0-9a-f]{1,4}$/.test(groups[7] as string)) {
    const high = parseInt(groups[6] as string, 16);
    const low = parseInt(groups[7] as string, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
