import { LicenseSdkError } from './errors.js';

// The payload the web application hands to the desktop signing application (docs/api.md,
// Endpoints): an object with one string field `data`; that string is JSON of
// {SignMethod: integer, Data: string}; Data is JSON again, of {Token: string, PinCode: string
// (may be empty), XmlFile: string[]}:
//
//   {"data":"{\"SignMethod\":0,\"Data\":\"{\\\"Token\\\":\\\"eyJ...\\\",\\\"PinCode\\\":\\\"\\\",\\\"XmlFile\\\":[\\\"<a/>\\\"]}\"}"}
//
// The decoder is for the receiving side, which must treat the payload as hostile input: it
// never throws anything but a HandoffError naming the field and what is wrong with it, and
// it refuses oversized input before parsing it. Fields the format does not name are ignored.

/** The hand-off, as this SDK's callers write it. */
export interface Handoff {
  /** SignMethod: an integer (the signature type, 0 Medula, 1 İBYS, in the service's flow) */
  signMethod: number;
  /** Token: the sign token */
  token: string;
  /** PinCode: may be empty */
  pinCode: string;
  /** XmlFile: the XML documents to sign */
  xmlFile: string[];
}

/** The payload as published. */
export interface HandoffPayload {
  data: string;
}

/** Sizes in UTF-16 code units (string length), checked by both encoder and decoder. */
export interface HandoffLimits {
  /** the `data` string (default 16 Mi) */
  maxDataLength: number;
  /** documents in XmlFile (default 1000) */
  maxXmlFiles: number;
  /** Token (default 4096, what validate accepts) */
  maxTokenLength: number;
  /** PinCode (default 256) */
  maxPinCodeLength: number;
}

export const DEFAULT_HANDOFF_LIMITS: Readonly<HandoffLimits> = {
  maxDataLength: 16 * 1024 * 1024,
  maxXmlFiles: 1000,
  maxTokenLength: 4096,
  maxPinCodeLength: 256,
};

/** What is wrong with a payload. */
export type HandoffProblem = 'NOT_JSON' | 'NOT_AN_OBJECT' | 'MISSING_FIELD' | 'WRONG_TYPE' | 'NESTED_JSON' | 'TOO_LARGE';

export class HandoffError extends LicenseSdkError {
  override name = 'HandoffError';

  constructor(
    readonly problem: HandoffProblem,
    /** where: `payload`, `data`, `data.SignMethod`, `data.Data.XmlFile[2]` … (encoder: the Handoff's field) */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** JSON escaping makes at most 6 characters of one (\u001f): the bound on a payload's text. */
const ESCAPE_GROWTH = 6;
const ENVELOPE = 64;

function limitsOf(limits: Partial<HandoffLimits> | undefined): HandoffLimits {
  return { ...DEFAULT_HANDOFF_LIMITS, ...limits };
}

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new HandoffError('NOT_AN_OBJECT', path, 'not a JSON object');
  return value as Record<string, unknown>;
}

function parseAt(text: string, path: string, problem: 'NOT_JSON' | 'NESTED_JSON'): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new HandoffError(problem, path, 'not valid JSON');
  }
}

/** The field `name` of the object; path: the field's own. */
function field(object: Record<string, unknown>, name: string, path: string): unknown {
  if (!Object.prototype.hasOwnProperty.call(object, name) || object[name] === undefined) {
    throw new HandoffError('MISSING_FIELD', path, 'missing');
  }
  return object[name];
}

function stringAt(value: unknown, path: string, maxLength: number): string {
  if (typeof value !== 'string') throw new HandoffError('WRONG_TYPE', path, `a string expected, got ${kindOf(value)}`);
  if (value.length > maxLength) throw new HandoffError('TOO_LARGE', path, `longer than ${maxLength}`);
  return value;
}

function integerAt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new HandoffError('WRONG_TYPE', path, `an integer expected, got ${kindOf(value)}`);
  return value;
}

function stringsAt(value: unknown, path: string, limits: HandoffLimits): string[] {
  if (!Array.isArray(value)) throw new HandoffError('WRONG_TYPE', path, `an array of strings expected, got ${kindOf(value)}`);
  if (value.length > limits.maxXmlFiles) throw new HandoffError('TOO_LARGE', path, `more than ${limits.maxXmlFiles} documents`);
  const docs: string[] = [];
  // a loop, not map: map skips the holes of a sparse array
  for (let i = 0; i < value.length; i++) docs.push(stringAt(value[i], `${path}[${i}]`, Infinity));
  return docs;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return 'a fraction';
  return `a ${typeof value}`;
}

/** The Handoff's fields, checked (the encoder's side: a caller's mistake, named by the Handoff's field). */
function checked(handoff: Handoff, limits: HandoffLimits): Handoff {
  objectAt(handoff, 'handoff');
  return {
    signMethod: integerAt(handoff.signMethod, 'signMethod'),
    token: stringAt(handoff.token, 'token', limits.maxTokenLength),
    pinCode: stringAt(handoff.pinCode, 'pinCode', limits.maxPinCodeLength),
    xmlFile: stringsAt(handoff.xmlFile, 'xmlFile', limits),
  };
}

/** The published payload of a hand-off; a HandoffError when a field is of the wrong type or over a limit. */
export function encodeHandoff(handoff: Handoff, limits?: Partial<HandoffLimits>): HandoffPayload {
  const max = limitsOf(limits);
  const h = checked(handoff, max);
  const inner = JSON.stringify({ Token: h.token, PinCode: h.pinCode, XmlFile: h.xmlFile });
  const data = JSON.stringify({ SignMethod: h.signMethod, Data: inner });
  if (data.length > max.maxDataLength) throw new HandoffError('TOO_LARGE', 'data', `longer than ${max.maxDataLength}`);
  return { data };
}

/**
 * The hand-off of a payload: the object {data}, or its JSON text. Anything else, or any
 * field missing, of the wrong type, holding broken JSON or over a limit: a HandoffError.
 */
export function decodeHandoff(payload: unknown, limits?: Partial<HandoffLimits>): Handoff {
  const max = limitsOf(limits);
  let outer = payload;
  if (typeof payload === 'string') {
    if (payload.length > max.maxDataLength * ESCAPE_GROWTH + ENVELOPE) throw new HandoffError('TOO_LARGE', 'payload', 'too long');
    outer = parseAt(payload, 'payload', 'NOT_JSON');
  }
  const data = stringAt(field(objectAt(outer, 'payload'), 'data', 'data'), 'data', max.maxDataLength);
  const envelope = objectAt(parseAt(data, 'data', 'NESTED_JSON'), 'data');
  const signMethod = integerAt(field(envelope, 'SignMethod', 'data.SignMethod'), 'data.SignMethod');
  // Data is shorter than data, which holds it: no length check of its own is needed
  const inner = stringAt(field(envelope, 'Data', 'data.Data'), 'data.Data', Infinity);
  const doc = objectAt(parseAt(inner, 'data.Data', 'NESTED_JSON'), 'data.Data');
  return {
    signMethod,
    token: stringAt(field(doc, 'Token', 'data.Data.Token'), 'data.Data.Token', max.maxTokenLength),
    pinCode: stringAt(field(doc, 'PinCode', 'data.Data.PinCode'), 'data.Data.PinCode', max.maxPinCodeLength),
    xmlFile: stringsAt(field(doc, 'XmlFile', 'data.Data.XmlFile'), 'data.Data.XmlFile', max),
  };
}
