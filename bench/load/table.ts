// One table: medians of the runs of each scenario, their spread, and the ratios to the
// ceilings that the targets of bench/README.md are stated in.

export interface Sample {
  name: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  serverUs: number;
  redisUs: number;
  non200: number;
  rssBefore: number;
  rssAfter: number;
  requests: number;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export type Row = Pick<Sample, 'name' | 'connections' | 'rps' | 'p50' | 'p99' | 'p999' | 'serverUs' | 'redisUs' | 'non200'> & {
  runs: number;
  spread: number;
  rss: string;
};

/** Medians per scenario and connection count, in the order the scenarios first ran. */
export function summarise(samples: Sample[]): Row[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const key = `${s.name}|${s.connections}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].map((g) => {
    const rps = g.map((s) => s.rps);
    const m = median(rps);
    const first = g[0] as Sample;
    return {
      name: first.name, connections: first.connections, runs: g.length, rps: m,
      spread: (Math.max(...rps) - Math.min(...rps)) / m,
      p50: median(g.map((s) => s.p50)), p99: median(g.map((s) => s.p99)), p999: median(g.map((s) => s.p999)),
      serverUs: median(g.map((s) => s.serverUs)), redisUs: median(g.map((s) => s.redisUs)),
      non200: g.reduce((a, s) => a + s.non200, 0),
      rss: `${Math.round(first.rssBefore / 1024)}→${Math.round((g[g.length - 1] as Sample).rssAfter / 1024)} MiB`,
    };
  });
}

const ms = (us: number) => (us / 1000).toFixed(2);

export function printTable(samples: Sample[], extra: { books: string[]; memory: string }): void {
  const all = summarise(samples);
  const out: string[] = [];
  out.push('| scenario | conns | runs | req/s (median) | spread | p50 ms | p99 ms | p99.9 ms | server µs/req | Redis µs/req | non-200 | server RSS |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of all) {
    out.push(`| ${r.name} | ${r.connections} | ${r.runs} | ${Math.round(r.rps)} | ${(r.spread * 100).toFixed(0)}% | ${ms(r.p50)} | ` +
      `${ms(r.p99)} | ${ms(r.p999)} | ${r.serverUs.toFixed(1)} | ${r.redisUs.toFixed(1)} | ${r.non200} | ${r.rss} |`);
  }
  const find = (name: string, c: number) => all.find((r) => r.name === name && r.connections === c);
  out.push('');
  out.push('| target (same run) | measured | verdict |');
  out.push('|---|---|---|');
  const target = (label: string, value: number | undefined, limit: number, atLeast: boolean) => {
    if (value === undefined || Number.isNaN(value)) return;
    const ok = atLeast ? value >= limit : value <= limit;
    out.push(`| ${label} ${atLeast ? '≥' : '≤'} ${limit} | ${value.toFixed(2)} | ${ok ? 'met' : `missed by ${(Math.abs(value - limit) / limit * 100).toFixed(0)}%`} |`);
  };
  for (const c of [...new Set(all.map((r) => r.connections))]) {
    const s = find('service validate', c);
    const ceil = find('ceiling (c) +evalsha', c);
    if (!s || !ceil) continue;
    target(`c=${c} validate req/s ÷ ceiling (c)`, s.rps / ceil.rps, 0.9, true);
    target(`c=${c} server CPU/req ÷ ceiling (c)`, s.serverUs / ceil.serverUs, 1.15, false);
    target(`c=${c} Redis CPU/req ÷ ceiling (c)`, s.redisUs / ceil.redisUs, 1.2, false);
    target(`c=${c} p99 ÷ ceiling (c)`, s.p99 / ceil.p99, 1.5, false);
  }
  const v64 = find('service validate', 64);
  const sign = find('service sign-token', 64);
  const quota = find('service check-quota', 64);
  const a64 = find('ceiling (a) beside check-quota', 64) ?? find('ceiling (a) uws+json', 64);
  const loaded = find('validate + get-token', 64);
  if (v64 && sign) target('sign-token req/s ÷ validate req/s', sign.rps / v64.rps, 0.8, true);
  if (a64 && quota) target('check-quota (cached) req/s ÷ ceiling (a)', quota.rps / a64.rps, 0.8, true);
  if (v64 && loaded) target('validate p99 under get-token load ÷ unloaded', loaded.p99 / v64.p99, 1.5, false);
  const validNon200 = all.filter((r) => r.name === 'service validate').reduce((a, r) => a + r.non200, 0);
  out.push(`| non-200 in valid-token service runs = 0 | ${validNon200} | ${validNon200 === 0 ? 'met' : 'missed'} |`);
  out.push('');
  out.push(extra.memory);
  out.push('');
  out.push('Books (every 200 is a unit of usedQuota; wrk abandons at most `connections` requests in flight at the end):');
  for (const b of extra.books) out.push(`- ${b}`);
  process.stdout.write(out.join('\n') + '\n');
}
