import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, type Stats, type WriteStream } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ApiError, type AdminApi, type Warning } from './api.js';
import { UsageError } from './args.js';
import { csvLine, CsvParser, type CsvRecord } from './csv.js';
import { Progress, type Counts } from './progress.js';
import { domainsOf, expiryOf, flagOf, wholeNumberOf } from './values.js';

// licensectl import <file.csv>: one license per row, streamed (the file is read as fast as
// the requests go, never held whole), at most `concurrency` requests in flight. A row the
// API refuses, or that is not well formed, goes to the rejects file with its reason; the
// others are created. A row without a licenseKey gets one here, so that a request retried
// after a lost answer cannot create the license twice.

const REQUIRED = ['organizationName', 'password', 'totalQuota', 'expiryDate'];
const OPTIONAL = ['isActive', 'domains', 'licenseKey'];
/** attempts per row when no answer came or the service was unavailable (503) */
const ATTEMPTS = 3;
/** rows whose warnings are printed one by one; the others are counted */
const WARNINGS_SHOWN = 10;

export interface ImportSummary {
  created: number;
  rejected: number;
  total: number;
  /** rows created with a warning of the API (an expiry already past) */
  warned: number;
  seconds: number;
  /** null when no row was rejected */
  rejectsFile: string | null;
}

type Row = Record<string, string>;

/** The create body of a row, or why the row is not one. */
function bodyOf(row: Row): Record<string, unknown> | string {
  const totalQuota = wholeNumberOf(row.totalQuota ?? '');
  if (totalQuota === null) return `totalQuota: not a whole number from 0 to 10^12: "${row.totalQuota}"`;
  const expiryDate = expiryOf(row.expiryDate ?? '');
  if (expiryDate === null) return `expiryDate: not YYYY-MM-DD or an RFC 3339 date-time: "${row.expiryDate}"`;
  const isActive = flagOf(row.isActive ?? '', true);
  if (isActive === null) return `isActive: not true or false: "${row.isActive}"`;
  return {
    organizationName: row.organizationName,
    password: row.password,
    totalQuota,
    expiryDate,
    isActive,
    domains: domainsOf(row.domains ?? '', ';'),
    licenseKey: (row.licenseKey ?? '').trim() || randomUUID(),
  };
}

/**
 * Creates one license: the API's warnings when created, else the reason it was not. An
 * ApiError of 401 goes up (every row would fail).
 */
async function createOne(api: AdminApi, body: Record<string, unknown>, keyIsOurs: boolean): Promise<string | Warning[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await api.answer('POST', '/admin/v1/licenses', body)).warnings;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.status === 401) throw err;
      // our own key taken after a lost answer: that was our create
      if (err.code === 'LICENSE_EXISTS' && keyIsOurs && attempt > 1) return [];
      const transient = err.status === 0 || err.status === 503;
      if (!transient || attempt >= ATTEMPTS) return `${err.code}: ${err.message}`;
      await new Promise((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
    }
  }
}

/** Whether `other` names the file at `path` (found): the same path, or the same device and inode (a link, another spelling). */
async function sameFile(path: string, found: Stats, other: string): Promise<boolean> {
  if (resolve(path) === resolve(other)) return true;
  const theirs = await stat(other).catch(() => null);
  return theirs !== null && theirs.dev === found.dev && theirs.ino === found.ino;
}

/**
 * Creates the licenses of the file. `warn` gets each of the first rows created with a
 * warning (after the progress bar has gone), and how many more there were.
 */
export async function importFile(
  api: AdminApi, file: string, rejectsPath: string, concurrency: number, warn: (line: string) => void = () => {},
): Promise<ImportSummary> {
  let found: Stats;
  try {
    found = await stat(file);
    // opened once here, so a file that cannot be read is this usage error, not a failure halfway
    await (await open(file, 'r')).close();
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'import');
  }
  if (!found.isFile()) throw new UsageError(`cannot read ${file}: ${found.isDirectory() ? 'EISDIR' : 'not a regular file'}`, 'import');
  const size = found.size;
  // the rejects file is emptied first: naming the file being imported would delete it
  if (await sameFile(file, found, rejectsPath)) throw new UsageError(`--rejects names the file being imported (${file}): name another`, 'import');
  await rm(rejectsPath, { force: true });
  const started = Date.now();
  const counts: Counts = { created: 0, rejected: 0, read: 0, bytes: 0, size };
  const progress = new Progress(counts);
  const inFlight = new Set<Promise<void>>();
  let header: string[] | null = null;
  let rejects: WriteStream | null = null;
  let fatal: unknown = null;
  const warned: string[] = [];
  let warnedRows = 0;

  const reject = (fields: string[], line: number, reason: string): void => {
    counts.rejected++;
    const columns = header as string[];
    if (rejects === null) {
      rejects = createWriteStream(rejectsPath);
      rejects.write(csvLine([...columns, 'reason']));
    }
    const original = columns.map((_, i) => fields[i] ?? '');
    rejects.write(csvLine([...original, `line ${line}: ${reason}`]));
  };

  const handle = (record: CsvRecord): void => {
    if (header === null) {
      header = record.fields.map((f) => f.trim());
      const unknown = header.filter((c) => !REQUIRED.includes(c) && !OPTIONAL.includes(c));
      const missing = REQUIRED.filter((c) => !(header as string[]).includes(c));
      const twice = header.filter((c, i) => (header as string[]).indexOf(c) !== i);
      if (unknown.length + missing.length + twice.length > 0) {
        const why = [unknown.length ? `unknown ${unknown.join(', ')}` : '', missing.length ? `missing ${missing.join(', ')}` : '',
          twice.length ? `twice ${twice.join(', ')}` : ''].filter(Boolean).join('; ');
        throw new UsageError(`${file}: the header's columns: ${why} (expected ${[...REQUIRED, ...OPTIONAL].join(',')})`, 'import');
      }
      return;
    }
    if (record.error !== undefined) return reject(record.fields, record.line, record.error);
    if (record.fields.length !== header.length) {
      return reject(record.fields, record.line, `wrong column count: expected ${header.length}, got ${record.fields.length}`);
    }
    const row: Row = {};
    header.forEach((c, i) => (row[c] = record.fields[i] as string));
    const body = bodyOf(row);
    if (typeof body === 'string') return reject(record.fields, record.line, body);
    const created = (warnings: Warning[]): void => {
      counts.created++;
      if (warnings.length === 0) return;
      if (++warnedRows <= WARNINGS_SHOWN) warned.push(`line ${record.line}: ${warnings.map((w) => w.message).join('; ')}`);
    };
    const job = createOne(api, body, (row.licenseKey ?? '').trim() === '').then(
      (outcome) => (typeof outcome === 'string' ? reject(record.fields, record.line, outcome) : created(outcome)),
      (err: unknown) => void (fatal ??= err),
    ).finally(() => inFlight.delete(job));
    inFlight.add(job);
  };

  const parser = new CsvParser();
  // rows parsed so far (the header not counted): with the bytes read, they estimate the file's rows
  const parsed = (records: CsvRecord[]): CsvRecord[] => {
    counts.read += records.length - (counts.read === 0 && header === null && records.length > 0 ? 1 : 0);
    return records;
  };
  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: 64 * 1024 });
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      counts.bytes += Buffer.byteLength(chunk);
      for (const record of parsed(parser.push(chunk))) {
        while (inFlight.size >= concurrency) await Promise.race(inFlight);
        if (fatal !== null) break;
        handle(record);
      }
      if (fatal !== null) break;
    }
    if (fatal === null) for (const record of parsed(parser.end())) handle(record);
    await Promise.all(inFlight);
  } finally {
    stream.destroy();
    progress.stop();
    await new Promise<void>((resolve) => (rejects === null ? resolve() : (rejects as WriteStream).end(resolve)));
  }
  for (const line of warned) warn(line);
  if (warnedRows > warned.length) warn(`${warnedRows - warned.length} more rows created with a warning`);
  if (fatal !== null) throw fatal;
  if (header === null) throw new UsageError(`${file}: empty (no header row)`, 'import');
  return {
    created: counts.created,
    rejected: counts.rejected,
    total: counts.created + counts.rejected,
    warned: warnedRows,
    seconds: Math.round((Date.now() - started) / 10) / 100,
    rejectsFile: counts.rejected > 0 ? rejectsPath : null,
  };
}
