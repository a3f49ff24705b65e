import type { ImzaTipi } from '@license-service/client';
import type { Client } from './http.js';
import { claimsOf } from './jwt.js';
import { sdkOf } from './sdk.js';
import { sleep } from './wait.js';

// The one token minter: real sign tokens through the API, as a client gets them (get-token
// once for the access token and a first sign token, then sign-token with the access token),
// through the client SDK (./sdk.ts). Every helper throws when the service refuses (the SDK's
// LicenseApiError, no retries), so a test that needs tokens never goes on without them (the
// RATE_* limits of the service must allow the calls).

export interface Credentials {
  licenseKey: string;
  password: string;
}

/** get-token: the access token and a first sign token. */
export async function getTokenPair(client: Client, lic: Credentials, imzaTipi = 0): Promise<{ accessToken: string; signToken: string }> {
  const { accessToken, signToken } = await sdkOf(client).getToken({ licenseKey: lic.licenseKey, password: lic.password, imzaTipi: imzaTipi as ImzaTipi });
  return { accessToken, signToken };
}

/** sign-token: one more sign token for the license of the access token. */
export async function signOne(client: Client, accessToken: string, imzaTipi = 0): Promise<string> {
  return (await sdkOf(client).signToken(accessToken, { imzaTipi: imzaTipi as ImzaTipi })).signToken;
}

/** get-token once, then `count - 1` sign-tokens at once: `count` sign tokens. */
export async function mintTokens(client: Client, lic: Credentials, count: number, imzaTipi = 0): Promise<{ accessToken: string; tokens: string[] }> {
  const { accessToken, signToken } = await getTokenPair(client, lic, imzaTipi);
  const more = await Promise.all(Array.from({ length: count - 1 }, () => signOne(client, accessToken, imzaTipi)));
  return { accessToken, tokens: [signToken, ...more] };
}

/** Sign tokens of one license one after another: the first from get-token (unless an access token is given), the rest from sign-token. */
export class TokenSource {
  constructor(
    private readonly client: Client,
    readonly lic: Credentials,
    private accessToken: string | null = null,
  ) {}

  async accessTokenOf(): Promise<string> {
    if (this.accessToken === null) await this.next();
    return this.accessToken as string;
  }

  async next(imzaTipi = 0): Promise<string> {
    if (this.accessToken === null) {
      const pair = await getTokenPair(this.client, this.lic, imzaTipi);
      this.accessToken = pair.accessToken;
      return pair.signToken;
    }
    return signOne(this.client, this.accessToken, imzaTipi);
  }

  /** n tokens, one after another; imzaTipi may differ per token (a function of its index). */
  async many(n: number, imzaTipi: number | ((i: number) => number) = 0): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(await this.next(typeof imzaTipi === 'number' ? imzaTipi : imzaTipi(i)));
    return out;
  }
}

/**
 * Redeems n new sign tokens of the access token's license one after another, a few ms apart
 * (so their usedAt orders them), imzaTipi alternating 0, 1; their token ids, oldest first.
 */
export async function redeemMany(client: Client, accessToken: string, n: number, origin?: (i: number) => string | undefined): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const token = await signOne(client, accessToken, i % 2);
    const o = origin?.(i);
    await sdkOf(client).validate({ token, origin: o });
    ids.push(claimsOf(token).token_id);
    await sleep(3);
  }
  return ids;
}
