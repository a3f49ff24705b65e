import { spawn } from 'node:child_process';
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
  constructor(readonly text: string, readonly series: Series[], readonly types: ReadonlyMap<string, string> = new Map()) {}

  /** The # TYPE of the metric a series line belongs to (a histogram's _bucket, _sum and _count lines: histogram). */
  typeOf(series: Series): string | undefined {
    return this.types.get(series.name) ?? this.types.get(series.name.replace(/_(bucket|sum|count)$/, ''));
  }

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
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a Prometheus text line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k as string] = (v as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    series.push({ name: m[1] as string, labels, value: m[3] === 'NaN' ? NaN : Number(m[3]) });
  }
  return new Scrape(text, series, types);
}

/** A series by name and labels, as one string (labels sorted). */
export function seriesKey(s: Series): string {
  return `${s.name}{${Object.keys(s.labels).sort().map((k) => `${k}="${s.labels[k]}"`).join(',')}}`;
}

/**
 * The counter and histogram series of `before` that are lower in `after`, or gone from it
 * (what Prometheus would read as a restart), each as "series: before -> after".
 */
export function wentBack(before: Scrape, after: Scrape): string[] {
  const now = new Map(after.series.map((s) => [seriesKey(s), s.value]));
  const back: string[] = [];
  for (const s of before.series) {
    const type = before.typeOf(s);
    if (type !== 'counter' && type !== 'histogram') continue;
    const value = now.get(seriesKey(s));
    if (value === undefined || value < s.value) back.push(`${seriesKey(s)}: ${s.value} -> ${value ?? 'gone'}`);
  }
  return back;
}

/** `promtool check metrics` of a scrape's text: its exit code and every line it printed (the problems it found). */
export function promtool(text: string): Promise<{ code: number | null; problems: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
    child.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'ENOENT'
      ? new Error('promtool is missing: make metrics-tools (Debian package prometheus)') : err));
    child.once('close', (code) => resolve({ code, problems: out.split('\n').map((l) => l.trim()).filter((l) => l !== '') }));
    child.stdin.end(text);
  });
}

/** GET /metrics (with a bearer token when given), parsed; throws unless 200 in the Prometheus text format. */
export async function scrape(client: Client, token?: string): Promise<Scrape> {
  const res = await client.request('GET', '/metrics', undefined, token === undefined ? {} : { authorization: `Bearer ${token}` });
  if (res.status !== 200) throw new Error(`/metrics: ${res.status} ${res.text}`);
  if (res.headers.get('content-type') !== 'text/plain; version=0.0.4; charset=utf-8') throw new Error(`/metrics: content-type ${res.headers.get('content-type')}`);
  return parseMetrics(res.text);
}
