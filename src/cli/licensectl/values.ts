// The values an admin types (on the command line or in an import file) in the form the
// admin API takes; null when a value is not one. The API checks them again.

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** YYYY-MM-DD (valid through that day: its last millisecond, UTC) or a date-time, as an ISO date-time. */
export function expiryOf(text: string): string | null {
  const day = DAY.exec(text.trim());
  if (day !== null) {
    const end = new Date(`${text.trim()}T23:59:59.999Z`);
    return Number.isNaN(end.getTime()) || end.toISOString().slice(0, 10) !== text.trim() ? null : end.toISOString();
  }
  return /^\d{4}-\d{2}-\d{2}T/.test(text.trim()) && !Number.isNaN(Date.parse(text.trim())) ? text.trim() : null;
}

/** A whole number from 0 (or 1) up to 10^12, written in decimal digits. */
export function wholeNumberOf(text: string, min = 0): number | null {
  if (!/^\d{1,13}$/.test(text.trim())) return null;
  const n = Number(text.trim());
  return n >= min && n <= 1e12 ? n : null;
}

/** A rate limit per minute: a whole number 0..10^9 (0: none for the license), or "default" (null: the deployment's). */
export function rateLimitOf(text: string): number | null | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'default') return null;
  if (!/^\d{1,10}$/.test(t)) return undefined;
  const n = Number(t);
  return n <= 1e9 ? n : undefined;
}

/** true/false, yes/no, 1/0 (any case); empty: the default. */
export function flagOf(text: string, fallback: boolean): boolean | null {
  const t = text.trim().toLowerCase();
  if (t === '') return fallback;
  if (['true', 'yes', '1'].includes(t)) return true;
  if (['false', 'no', '0'].includes(t)) return false;
  return null;
}

/** A list of domains separated by `separator`, blanks dropped. */
export function domainsOf(text: string, separator: string): string[] {
  return text.split(separator).map((d) => d.trim()).filter((d) => d !== '');
}

/** YYYY-MM-DD (from that day's start, UTC) or a date-time, as an ISO date-time: where a list starts (--since). */
export function sinceOf(text: string): string | null {
  const t = text.trim();
  if (DAY.test(t)) {
    const start = new Date(`${t}T00:00:00.000Z`);
    return Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== t ? null : start.toISOString();
  }
  return /^\d{4}-\d{2}-\d{2}T/.test(t) && !Number.isNaN(Date.parse(t)) ? t : null;
}
