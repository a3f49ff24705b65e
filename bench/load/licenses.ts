import { ADMIN_TOKEN } from './services.js';

// The bench's licenses, made through the public and admin API of a running service, as a
// customer would: one call each, and an access token each through get-token.

/** A JSON call; a status of 300 or more throws with the body. */
export async function api(method: string, url: string, body?: unknown, token?: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(url, {
    method, body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export interface BenchLicense {
  key: string;
  /** the company its tokens name (firma_id): validate's rate limit counts per company */
  firmaId: string;
  password: string;
  access: string;
}

/**
 * `count` licenses with quota to spare, created on the service at `base`, each with an
 * access token; `inFlight` of them made at once (each creation and login hashes a password).
 */
export async function createLicenses(base: string, count: number, inFlight = 1): Promise<BenchLicense[]> {
  const licenses: BenchLicense[] = [];
  let next = 0;
  const one = async (i: number) => {
    const password = `bench-password-${i}`;
    const created = await api('POST', `${base}/admin/v1/licenses`, {
      organizationName: `Bench ${i}`, password, totalQuota: 1e12, expiryDate: '2099-01-01T00:00:00Z',
    }, ADMIN_TOKEN);
    const got = await api('POST', `${base}/api/v1/auth/get-token`, { licenseKey: created.data.licenseKey, password, imzaTipi: 0 });
    licenses[i] = { key: created.data.licenseKey, firmaId: created.data.firmaId, password, access: got.accessToken };
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, async () => {
    while (next < count) await one(next++);
  }));
  return licenses;
}
