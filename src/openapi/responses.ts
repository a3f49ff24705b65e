import type { TSchema } from '@sinclair/typebox';
import { RATE_WINDOW_MS } from '../config.js';
import { describeCases, oneOf, schemaOfParts, type Example, type HeaderUse, type RateLimitDoc, type ResponseDoc, type SchemaParts } from './routeDoc.js';
import { responseHeaders } from './schemas.js';

// The Response objects of the document (src/openapi/document.ts): a status's description,
// body and headers, each header required when every answer of the status carries it and
// otherwise described with the answers that do; the RateLimit fields from the route's
// declared limits; two answers of one status merged into one.

export const WINDOW_SECONDS = RATE_WINDOW_MS / 1000;

export function media(schema: TSchema, examples: Example[]): Record<string, unknown> {
  return { schema, examples: Object.fromEntries(examples.map((e, i) => [exampleName(e.summary, i), e])) };
}

function exampleName(summary: string, i: number): string {
  const words = summary.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim().split(' ');
  let name = String(i + 1);
  for (const word of words) {
    if (name.length + word.length > 48) break;
    name += `-${word}`;
  }
  return name;
}

/** One response: its description, its headers (each required when every answer carries it) and its body. */
export function responseObject(r: ResponseDoc, limits: RateLimitDoc[], name: string, status?: number): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (const use of r.headers ?? []) {
    const [headerName, h] = headerObject(use, name);
    headers[headerName] = h;
  }
  if (status !== undefined) Object.assign(headers, rateLimitHeaders(limits, status));
  if (r.noBody === true) return { description: r.description, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
  return {
    description: r.description,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: {
      [r.contentType ?? 'application/json']: media(r.schema, r.examples),
      ...Object.fromEntries((r.otherMedia ?? []).map((m) => [m.contentType, media(m.schema, m.examples)])),
    },
  };
}

function headerObject(use: HeaderUse, name: string): [string, Record<string, unknown>] {
  const u = typeof use === 'string' ? { name: use } : use;
  const h = responseHeaders[u.name];
  if (!h) throw new Error(`${name}: header ${u.name} is not in responseHeaders (src/openapi/schemas.ts)`);
  return [u.name, {
    description: u.when === undefined ? h.description : `${h.description}. Sent only with: ${u.when}.`,
    required: u.when === undefined,
    schema: u.value === undefined ? h.schema : { ...h.schema, const: u.value },
  }];
}

/**
 * RateLimit-Policy and RateLimit on a status of a rate-limited route: on the statuses its
 * limits name (RateLimitDoc.statuses), required when every answer of the status carries
 * them; none when the limits that name it are off.
 */
function rateLimitHeaders(limits: RateLimitDoc[], status: number): Record<string, unknown> {
  const on = limits.filter((l) => l.limit > 0 && l.statuses[status] !== undefined);
  if (on.length === 0) return {};
  const policies = describeCases(on.map((l) => {
    const which = l.statuses[status] === 'every' ? 'on every answer of this status' : `only on ${l.statuses[status]}`;
    const own = l.perLicense === true ? '; a license with a limit of its own (the admin API\'s rateLimits) is held to that one, which q then shows, and one whose own limit is 0 gets neither field' : '';
    return `"${l.policy}" (${l.limit} requests per ${WINDOW_SECONDS} s per ${l.per}, ${l.setting}${own}): ${which}`;
  }));
  const required = on.some((l) => l.statuses[status] === 'every');
  // the very values this instance sends: the policy as configured, the figures left of it
  const names = on.map((l) => l.policy.replace(/[^a-z-]/g, (c) => `\\${c}`)).join('|');
  // a policy a license may set says its own q: any figure
  const policyPatterns = on.map((l) => (l.perLicense === true
    ? `"${l.policy.replace(/[^a-z-]/g, (c) => `\\${c}`)}";q=\\d+;w=${WINDOW_SECONDS}`
    : l.policyField.replace(/[^a-z0-9"=;-]/g, (c) => `\\${c}`)));
  const policySchema = on.some((l) => l.perLicense === true) ? { type: 'string', pattern: `^(?:${policyPatterns.join('|')})$` }
    : on.length === 1 ? { type: 'string', const: (on[0] as RateLimitDoc).policyField } : { type: 'string', enum: on.map((l) => l.policyField) };
  const schemas: Record<string, unknown> = {
    'RateLimit-Policy': policySchema,
    RateLimit: { type: 'string', pattern: `^"(?:${names})";r=\\d+;t=\\d+$` },
  };
  return Object.fromEntries(['RateLimit-Policy', 'RateLimit'].map((h) => {
    const base = responseHeaders[h] as { description: string };
    return [h, { description: `${base.description}.\n\n${policies}`, required, schema: schemas[h] }];
  }));
}

/** The cases of a description made by describeCases. */
function casesOf(description: string): string[] {
  return description.startsWith('- ') ? description.split('\n').map((line) => line.slice(2)) : [description];
}

/** Two documented answers of one status as one: either body, both sets of examples, each header sent where it was. */
export function merge(a: ResponseDoc | undefined, b: ResponseDoc): ResponseDoc {
  if (!a) return b;
  const byName = (r: ResponseDoc) => new Map((r.headers ?? []).map((u) => (typeof u === 'string' ? [u, { name: u }] : [u.name, u])));
  const [ha, hb] = [byName(a), byName(b)];
  const whenOf = (r: ResponseDoc, u: { when?: string } | undefined): string | null => (u === undefined ? null : u.when ?? casesOf(r.description).join('; '));
  const headers: HeaderUse[] = [...new Set([...ha.keys(), ...hb.keys()])].map((headerName) => {
    const [ua, ub] = [ha.get(headerName), hb.get(headerName)];
    const value = ua?.value !== undefined && (ub === undefined || ub.value === ua.value) ? ua.value : ub?.value;
    if (ua && ub && ua.when === undefined && ub.when === undefined) return { name: headerName, ...(value !== undefined ? { value } : {}) };
    const when = [whenOf(a, ua), whenOf(b, ub)].filter((w) => w !== null).join('; ');
    return { name: headerName, when, ...(value !== undefined ? { value } : {}) };
  });
  return {
    description: describeCases([...casesOf(a.description), ...casesOf(b.description)]),
    ...mergedSchema(a, b),
    examples: [...a.examples, ...b.examples],
    ...(headers.length > 0 ? { headers } : {}),
    ...(a.contentType ? { contentType: a.contentType } : {}),
  };
}

/** One family's bodies merge into one schema of all their codes; answers of other shapes are further branches. */
function mergedSchema(a: ResponseDoc, b: ResponseDoc): { schema: TSchema; parts?: SchemaParts } {
  if (a.parts && b.parts && a.parts.schemaOf === b.parts.schemaOf) {
    const parts = { schemaOf: a.parts.schemaOf, family: [...a.parts.family, ...b.parts.family], own: [...a.parts.own, ...b.parts.own] };
    return { schema: schemaOfParts(parts), parts };
  }
  return { schema: oneOf([...new Set([...schemasOf(a.schema), ...schemasOf(b.schema)])]) };
}

function schemasOf(schema: TSchema): TSchema[] {
  const branches = (schema as { oneOf?: TSchema[] }).oneOf;
  return branches ?? [schema];
}

