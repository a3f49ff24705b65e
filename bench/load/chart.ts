// The picture beside make bench's tables: one row per scenario and mode, req/s on the
// left and p99 on the right, as horizontal bars (an SVG any browser or GitHub shows).

export interface ChartRow {
  label: string;
  rps: number;
  /** ms; null where the scenario has none (the sustained rate) */
  p99: number | null;
  kind: 'ceiling' | 'service' | 'deployed' | 'sustained';
}

const COLOURS: Record<ChartRow['kind'], string> = {
  ceiling: '#9aa5b1', service: '#2f6fdb', deployed: '#1b9e5a', sustained: '#e07b00',
};

const ROW_H = 22;
const LABEL_W = 300;
const PANEL_W = 330;
const GAP = 40;
const TOP = 56;

/** text for an SVG element or attribute */
export const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function panel(rows: ChartRow[], x0: number, title: string, value: (r: ChartRow) => number | null, format: (v: number) => string): string {
  const max = Math.max(1, ...rows.map((r) => value(r) ?? 0));
  const parts = [`<text x="${x0}" y="${TOP - 14}" class="title">${escape(title)}</text>`];
  rows.forEach((r, i) => {
    const v = value(r);
    const y = TOP + i * ROW_H;
    if (v === null) return;
    const w = Math.max(1, (v / max) * (PANEL_W - 70));
    parts.push(`<rect x="${x0}" y="${y + 3}" width="${w.toFixed(1)}" height="${ROW_H - 7}" fill="${COLOURS[r.kind]}"/>`);
    parts.push(`<text x="${(x0 + w + 4).toFixed(1)}" y="${y + ROW_H - 8}" class="value">${escape(format(v))}</text>`);
  });
  return parts.join('\n');
}

/** The SVG document for these rows, titled. */
export function chartSvg(title: string, rows: ChartRow[]): string {
  const width = LABEL_W + 2 * PANEL_W + GAP + 20;
  const height = TOP + rows.length * ROW_H + 40;
  const labels = rows.map((r, i) =>
    `<text x="${LABEL_W - 8}" y="${TOP + i * ROW_H + ROW_H - 8}" class="label">${escape(r.label)}</text>`).join('\n');
  const legend = (Object.keys(COLOURS) as ChartRow['kind'][]).map((k, i) =>
    `<rect x="${LABEL_W + i * 150}" y="${height - 26}" width="12" height="12" fill="${COLOURS[k]}"/>` +
    `<text x="${LABEL_W + i * 150 + 16}" y="${height - 16}" class="value">${k === 'sustained' ? 'sustained (open loop)' : k === 'deployed' ? 'as deployed' : k}</text>`).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<style>
  text { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 12px; fill: #1f2328; }
  .label { text-anchor: end; }
  .title { font-weight: 600; font-size: 13px; }
  .heading { font-weight: 600; font-size: 15px; }
  .value { font-size: 11px; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="20" class="heading">${escape(title)}</text>
${labels}
${panel(rows, LABEL_W, 'requests per second (median)', (r) => r.rps, (v) => Math.round(v).toLocaleString('en-US'))}
${panel(rows, LABEL_W + PANEL_W + GAP, 'p99 latency, ms (median)', (r) => r.p99, (v) => v.toFixed(2))}
${legend}
</svg>
`;
}
