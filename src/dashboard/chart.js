// The bar chart of redemptions per day (dashboard.js), in the browser's time zone.
import { $, numberFormat } from './view.js';

/** days of the chart, today included */
export const CHART_DAYS = 14;
const dayFormat = new Intl.DateTimeFormat('tr-TR', { day: 'numeric', month: 'short' });

/** The local calendar day of an instant, as YYYY-MM-DD. */
function dayKey(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** Midnight (local) of the chart's first day. */
export function chartStart() {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  d.setDate(d.getDate() - (CHART_DAYS - 1));
  return d.getTime();
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(name, attributes, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** One bar per day of the window, counts above, day below; each bar titled for pointer and screen reader. */
export function drawChart(items, truncated) {
  const start = chartStart();
  const days = [];
  for (let i = 0; i < CHART_DAYS; i++) {
    const d = new Date(start);
    d.setDate(d.getDate() + i);
    days.push({ key: dayKey(d.getTime()), date: d, count: 0 });
  }
  const byKey = new Map(days.map((d) => [d.key, d]));
  let inWindow = 0;
  for (const item of items) {
    const day = byKey.get(dayKey(Date.parse(item.usedAt)));
    if (day) {
      day.count++;
      inWindow++;
    }
  }
  const max = Math.max(1, ...days.map((d) => d.count));
  const chart = $('chart');
  // drawn in the chart's own pixels (redrawn on resize), so labels keep their size at any width
  const slot = Math.max(20, Math.floor((chart.clientWidth || 560) / CHART_DAYS));
  const top = 20;
  const plot = 120;
  chart.replaceChildren();
  chart.setAttribute('viewBox', `0 0 ${slot * CHART_DAYS} ${top + plot + 24}`);
  chart.appendChild(svg('line', { class: 'axis', x1: 0, x2: slot * CHART_DAYS, y1: top + plot, y2: top + plot }));
  days.forEach((day, i) => {
    const height = day.count === 0 ? 0 : Math.max(2, Math.round((day.count / max) * plot));
    const gap = Math.min(6, Math.floor(slot / 5));
    const x = i * slot + gap;
    const bar = svg('rect', { class: 'bar', x, y: top + plot - height, width: slot - 2 * gap, height, rx: 2, 'data-day': day.key, 'data-count': day.count });
    bar.appendChild(svg('title', {}, `${dayFormat.format(day.date)}: ${day.count} kullanım`));
    chart.appendChild(bar);
    if (day.count > 0) chart.appendChild(svg('text', { class: 'bar-count', x: x + slot / 2 - gap, y: top + plot - height - 5, 'text-anchor': 'middle' }, day.count));
    chart.appendChild(svg('text', { class: 'bar-day', x: x + slot / 2 - gap, y: top + plot + 17, 'text-anchor': 'middle' }, day.date.getDate()));
  });
  const busiest = days.reduce((a, b) => (b.count > a.count ? b : a));
  $('chart-days').textContent = String(CHART_DAYS);
  $('chart-summary').textContent = `Son ${CHART_DAYS} günde ${numberFormat.format(inWindow)} kullanım`
    + (inWindow > 0 ? `; en yoğun gün ${dayFormat.format(busiest.date)} (${busiest.count})` : '')
    + (truncated ? `. Yalnızca son ${numberFormat.format(items.length)} kullanım sayıldı.` : '.');
}
