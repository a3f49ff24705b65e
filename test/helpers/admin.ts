import { ADMIN_TOKEN, type Harness } from './harness.js';
import type { Answer } from './http.js';
import type { Asserts } from './shapes.js';

// The admin API as its suites (test/routes/admin.*) see it: a create body, the License view
// it answers with, its 400 naming the field, its 401 for anything but the admin bearer, and
// the live view of a license for the other suites.

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const LICENSE_FIELDS = [
  'licenseKey', 'firmaId', 'organizationName', 'totalQuota', 'usedQuota', 'remainingQuota',
  'quotaPercentage', 'expiryDate', 'isActive', 'domains', 'webhookUrl', 'webhookSecretSet', 'packages', 'releasesPerDay', 'rateLimits',
].sort();
export const PASSWORD = 'admin-test-password-42';
export const inAYear = (): string => new Date(Date.now() + 365 * 86400_000).toISOString();

/** A valid create body (quota 5, a year ahead); `extra` wins. */
export function createBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { organizationName: 'Örnek Eczane Ltd.', password: PASSWORD, totalQuota: 5, expiryDate: inAYear(), ...extra };
}

/** Asserts a 400 INVALID_REQUEST whose message names the field. */
export function expectInvalid(t: Asserts, res: Answer, field: string): void {
  t.equal(res.status, 400, `400 for ${field}`);
  t.equal(res.body?.success, false);
  t.equal(res.body?.error?.code, 'INVALID_REQUEST', `INVALID_REQUEST for ${field}`);
  t.type(res.body?.error?.message, 'string');
  t.match(String(res.body?.error?.message), field, `message names ${field}: ${res.text}`);
}

/** Asserts a License view: exactly the published fields, nothing secret. */
export function expectLicenseView(t: Asserts, res: Answer, status: number, password = PASSWORD): void {
  t.equal(res.status, status, `status ${status}: ${res.text}`);
  t.equal(res.body?.success, true);
  t.same(Object.keys(res.body?.data ?? {}).sort(), LICENSE_FIELDS, 'exactly the License fields');
  t.notMatch(res.text, password, 'never the password');
  t.notMatch(res.text, /argon2|password|hash/i, 'never a hash or a password field');
}

/** Authorization headers that are not the admin bearer. */
const NOT_THE_ADMIN: [string, Record<string, string>][] = [
  ['no header', {}],
  ['wrong token', { authorization: 'Bearer wrong-admin-token-0123456789' }],
  ['token with a suffix', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
  ['token prefix', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
  ['basic scheme', { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
  ['empty bearer', { authorization: 'Bearer ' }],
];

/** The admin route answers 401 UNAUTHORIZED to every Authorization that is not the admin bearer. */
export async function expectAdminAuthRefused(t: Asserts, h: Harness, method: string, path: string, body?: unknown): Promise<void> {
  for (const [what, headers] of NOT_THE_ADMIN) {
    const res = await h.request(method, path, body, headers);
    t.equal(res.status, 401, `${method} ${path} ${what}`);
    t.equal(res.body?.success, false);
    t.equal(res.body?.error?.code, 'UNAUTHORIZED');
    t.type(res.body?.error?.message, 'string');
  }
}

/** The license as the admin API sees it now (live quota). */
export async function adminView(h: Harness, licenseKey: string): Promise<Record<string, unknown>> {
  return adminOk(h, 'GET', `/admin/v1/licenses/${licenseKey}`);
}

/** An admin call that must answer 200; its data. */
export async function adminOk(h: Harness, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await h.admin(method, path, body);
  if (res.status !== 200) throw new Error(`admin ${method} ${path}: ${res.status} ${res.text}`);
  return res.body.data as Record<string, unknown>;
}
