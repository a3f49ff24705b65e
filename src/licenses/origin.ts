import { domainToASCII } from 'node:url';

/**
 * The host name of an origin as the client sent it: scheme, port and path dropped, lower
 * case, internationalised names in their ASCII (punycode) form. "" when there is none.
 */
export function originHost(origin: string): string {
  const text = origin.trim();
  if (text === '') return '';
  let host: string;
  try {
    host = new URL(text.includes('://') ? text : `http://${text}`).hostname;
  } catch {
    return '';
  }
  host = domainToASCII(host).toLowerCase();
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** An authorised-domain entry normalised ("example.com", "*.example.com"), or null if invalid. */
export function normaliseDomain(entry: string): string | null {
  const text = entry.trim();
  const wildcard = text.startsWith('*.');
  const host = originHost(wildcard ? text.slice(2) : text);
  if (host === '' || host.includes(',') || !host.split('.').every((l) => LABEL.test(l))) return null;
  return wildcard ? `*.${host}` : host;
}

/** The list encodeDomains wrote. */
export function decodeDomains(encoded: string): string[] {
  return encoded === '' ? [] : encoded.slice(1, -1).split(',');
}

/** The form redeem.lua searches: ",a.com,*.b.com," ("" when any origin is accepted). */
export function encodeDomains(domains: readonly string[]): string {
  return domains.length === 0 ? '' : `,${domains.join(',')},`;
}
