// Secrets that anyone who has read the repository or its documentation knows. An operator who
// copies an example file and forgets a value would otherwise run with a secret that lets a
// stranger forge access tokens (JWT_SECRET: a license's firma_id is in every token and
// receipt a customer holds) or use the admin API (ADMIN_TOKEN). So every secret-bearing
// setting is read through placeholderIn, and the start is refused naming the setting, never
// the value.

/** Values shipped in examples of this repository, past and present (compared without case). */
const SHIPPED = new Set([
  'change-me-to-48-random-bytes-in-base64',
  'change-me-to-a-long-random-token',
  'change-me-alice-token',
  'change-me-bob-token',
]);

/** Words that mark a value as one to be replaced. */
const MARKERS = /change[-_. ]?me|replace[-_. ]?(me|this|with)|your[-_. ]?(own[-_. ]?)?(secret|token|password|key)|placeholder|example|dummy|fill[-_. ]?in|\bto[-_. ]?do\b|\btbd\b|<[^>]*>|\$\{[^}]*\}|x{6,}/i;

/** Values that are a word alone, as typed by hand in a hurry. */
const BARE_WORDS = new Set(['secret', 'password', 'passw0rd', 'token', 'admin', 'changeit', 'default', 'test', 'letmein', 'qwerty']);

/**
 * Why a secret's value is obviously not a secret, or null. Kept short of judging strength
 * beyond that: lengths are each setting's own rule.
 */
export function placeholderIn(value: string): string | null {
  const v = value.trim();
  if (v === '') return null;
  const lower = v.toLowerCase();
  if (SHIPPED.has(lower)) return 'it is the example value this service\'s documentation ships';
  if (MARKERS.test(v)) return 'it reads as a placeholder to replace';
  if (BARE_WORDS.has(lower)) return 'it is a common word, not a secret';
  if (/^(.{1,8}?)\1+$/s.test(v)) return 'it is one short piece repeated';
  if (v.length >= 16 && new Set(v).size < 6) return 'it uses fewer than 6 different characters';
  return null;
}

/** The password of a URL (redis://user:pass@host, postgres://...), decoded; "" when it has none or cannot be read. */
export function urlPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}
