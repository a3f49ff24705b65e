import type { Client } from './http.js';

// GET /metrics read as a user's Prometheus would: the text format parsed into series, and
// the value of one series by name and labels (NaN stays NaN). Tests compare scrapes before
// and after what they do: a delta is exact, whatever other tests left behind.

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class Scrape {
  constructor(readonly text: string, readonly series: Series[]) {}

  /** The series of this name whose labels include these. */
  find(name: string, labels: Record<string, string> = {}): Series[] {
    return this.series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The sum of the series of this name whose labels include these: 0 when there is none (a series not yet bound). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.find(name, labels).reduce((a, s) => a + s.value, 0);
  }
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Scrape {
  const series: Series[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a Prometheus text line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k as string] = (v as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    series.push({ name: m[1] as string, labels, value: m[3] === 'NaN' ? NaN : Number(m[3]) });
  }
  return new Scrape(text, series);
}

/** GET /metrics (with a bearer token when given), parsed; throws unless 200 in the Prometheus text format. */
export async function scrape(client: Client, token?: string): Promise<Scrape> {
  const res = await client.request('GET', '/metrics', undefined, token === undefined ? {} : { authorization: `Bearer ${token}` });
  if (res.status !== 200) throw new Error(`/metrics: ${res.status} ${res.text}`);
  if (res.headers.get('content-type') !== 'text/plain; version=0.0.4; charset=utf-8') throw new Error(`/metrics: content-type ${res.headers.get('content-type')}`);
  return parseMetrics(res.text);
}
