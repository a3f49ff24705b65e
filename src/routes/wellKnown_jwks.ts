import { Type } from '@sinclair/typebox';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

// GET /.well-known/jwks.json: the Ed25519 public keys of license tokens and receipts, for
// verifying them offline. Built once at start (the keys change only with a restart).

/**
 * Cached for an hour by clients and shared caches: a key is added a restart ahead of signing
 * with it (docs/operations.md#signing-keys), so a copy an hour old still holds the signing key.
 */
const CACHE: readonly [string, string] = ['Cache-Control', 'public, max-age=3600'];

const Jwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'the public key, base64url' }),
  kid: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'the key\'s RFC 7638 thumbprint: the kid of the JWS it signs' }),
  alg: Type.Literal('EdDSA'),
  use: Type.Literal('sig'),
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'The public keys of license tokens and signing receipts (JWKS)',
  description: 'Ed25519 keys (RFC 8037) as a JSON Web Key Set: license tokens and receipts are JWS with alg EdDSA whose kid ' +
    'names one of them. The first key signs; the others are published so that what they signed still verifies. Fetch once ' +
    'and cache; fetch again on a kid not in the set.',
  tags: ['public'],
  auth: 'none',
  neverUnavailable: true,
  responses: {
    200: {
      description: 'the key set',
      schema: Type.Object({ keys: Type.Array(Jwk, { minItems: 1 }) }, { additionalProperties: false }),
      examples: [{
        summary: 'one key',
        value: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k', alg: 'EdDSA', use: 'sig' }] },
      }],
      headers: ['Cache-Control'],
    },
  },
};

/** GET /.well-known/jwks.json */
export function jwksRoute(ctx: RouteContext): Route {
  const answer: Reply = { status: '200 OK', body: ctx.artefacts.jwksBody, headers: [CACHE] };
  return { method: 'get', path: '/.well-known/jwks.json', errors: codedErrors, cors: true, doc, handler: () => answer };
}
