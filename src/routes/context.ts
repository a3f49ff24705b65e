import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { HotLicenses } from '../licenses/hot.js';
import type { LicenseAdmin } from '../licenses/changes.js';
import type { Passwords } from '../licenses/passwords.js';
import type { LicenseStore } from '../licenses/store.js';
import type { LoginLimits } from '../licenses/loginLimits.js';
import type { Metrics } from '../metrics/registry.js';
import type { RedisClient } from '../redis/client.js';
import type { KeySpace } from '../redis/keys.js';
import type { TokenService } from '../tokens/jwt.js';
import type { ArtefactSigner } from '../tokens/signingKeys.js';
import type { SignTokenIssuer } from '../tokens/issueSignToken.js';
import type { SignTokenRedeemer } from '../tokens/redeemSignToken.js';
import type { SignTokenReleaser } from '../tokens/releaseSignToken.js';
import type { Sql } from '../db/pg.js';

/** What the routes share, built once at start (src/service.ts). */
export interface RouteContext {
  config: Config;
  log: Logger;
  sql: Sql;
  redis: RedisClient;
  keys: KeySpace;
  tokens: TokenService;
  /** signs license tokens and receipts (Ed25519); the JWKS. null: no signing keys, the routes that sign answer 503 */
  artefacts: ArtefactSigner | null;
  store: LicenseStore;
  hot: HotLicenses;
  passwords: Passwords;
  logins: LoginLimits;
  /** get-token and sign-token share it, so their requests batch together */
  issuer: SignTokenIssuer;
  redeemer: SignTokenRedeemer;
  releaser: SignTokenReleaser;
  admin: LicenseAdmin;
  /** what the routes count (GET /metrics); recording is a no-op with METRICS=0 */
  metrics: Metrics;
}
