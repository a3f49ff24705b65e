import { escape } from './chart.js';

// The picture of make bench-soak: one panel per figure, its value minute by minute, as a
// line over the run (an SVG any browser or GitHub shows).

export interface SoakSeries {
  title: string;
  /** one value a minute */
  values: number[];
  format: (v: number) => string;
  colour: string;
}

const PANEL_W = 420;
const PANEL_H = 150;
const GAP = 30;
const LEFT = 60;
const TOP = 50;

function panel(series: SoakSeries, x0: number, y0: number): string {
  const { values } = series;
  // from zero, so a flat line looks flat and a 5 % drift looks like 5 %
  const max = Math.max(1e-9, ...values) * 1.15;
  const x = (i: number) => x0 + (values.length <= 1 ? 0 : (i / (values.length - 1)) * PANEL_W);
  const y = (v: number) => y0 + PANEL_H - (v / max) * PANEL_H;
  const points = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const parts = [
    `<text x="${x0}" y="${y0 - 10}" class="title">${escape(series.title)}</text>`,
    `<line x1="${x0}" y1="${y0 + PANEL_H}" x2="${x0 + PANEL_W}" y2="${y0 + PANEL_H}" class="axis"/>`,
    `<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y0 + PANEL_H}" class="axis"/>`,
    `<text x="${x0 - 6}" y="${y0 + 4}" class="tick end">${escape(series.format(max))}</text>`,
    `<text x="${x0 - 6}" y="${y0 + PANEL_H}" class="tick end">0</text>`,
    `<polyline points="${points}" fill="none" stroke="${series.colour}" stroke-width="2"/>`,
    ...values.map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${series.colour}"><title>minute ${i + 1}: ${escape(series.format(v))}</title></circle>`),
    ...values.map((_, i) => `<text x="${x(i).toFixed(1)}" y="${y0 + PANEL_H + 14}" class="tick mid">${i + 1}</text>`),
  ];
  return parts.join('\n');
}

/** The SVG document: the panels two a row, titled; the x axis is the minute of the run. */
export function soakSvg(title: string, series: SoakSeries[]): string {
  const rows = Math.ceil(series.length / 2);
  const width = LEFT + 2 * PANEL_W + GAP + LEFT;
  const height = TOP + rows * (PANEL_H + 60) + 10;
  const panels = series.map((s, i) => panel(s, LEFT + (i % 2) * (PANEL_W + GAP + LEFT - 20), TOP + Math.floor(i / 2) * (PANEL_H + 60)));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<style>
  text { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 12px; fill: #1f2328; }
  .title { font-weight: 600; font-size: 13px; }
  .heading { font-weight: 600; font-size: 15px; }
  .tick { font-size: 10px; fill: #57606a; }
  .end { text-anchor: end; }
  .mid { text-anchor: middle; }
  .axis { stroke: #d0d7de; stroke-width: 1; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="10" y="22" class="heading">${escape(title)}</text>
${panels.join('\n')}
</svg>
`;
}
