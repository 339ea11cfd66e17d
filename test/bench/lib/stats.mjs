// Numbers and tables: percentiles, ratios, target checks and the plain-text table printer.

/** Nearest-rank percentile of an unsorted array (`p` in 0..100). NaN for an empty array. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function median(values) {
  return percentile(values, 50);
}

/** p50/p99/min/max/mean of a sample, plus its size. */
export function summarize(values) {
  if (values.length === 0) return { n: 0, p50: Number.NaN, p99: Number.NaN, min: Number.NaN, max: Number.NaN, mean: Number.NaN };
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return { n: values.length, p50: percentile(values, 50), p99: percentile(values, 99), min, max, mean: sum / values.length };
}

export function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}

/** "1.32×", or "–" when not computable. */
export function fmtRatio(r) {
  if (!Number.isFinite(r)) return '–';
  return r !== 0 && Math.abs(r) < 0.1 ? `${r.toPrecision(2)}×` : `${r.toFixed(2)}×`;
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt(value, digits = 0) {
  if (value === undefined || value === null || Number.isNaN(value)) return '–';
  if (typeof value !== 'number') return String(value);
  if (digits > 0) return value.toFixed(digits);
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function fmtMb(bytes) {
  return Number.isFinite(bytes) ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : '–';
}

/** Range of per-round ratios, e.g. "[1.10–1.45]": shows how much the machine's noise moved them. */
export function fmtRange(values) {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return '';
  return `[${Math.min(...finite).toFixed(2)}–${Math.max(...finite).toFixed(2)}]`;
}

/**
 * A target line: `{ label, measured (text), ok (boolean | undefined) }` → "label: measured ✓".
 * `ok === undefined` means it could not be judged (e.g. the section was cut short).
 */
export function target(label, measured, ok) {
  return { label, measured, ok, mark: ok === undefined ? '?' : ok ? '✓' : '✗ (missed)' };
}

/** Prints a table: `columns` are header strings, `rows` arrays of cells (strings or numbers). */
export function renderTable(columns, rows) {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === 'number' ? fmt(cell) : String(cell ?? ''))));
  const widths = columns.map((header, i) => Math.max(header.length, ...cells.map((row) => (row[i] ?? '').length)));
  const numeric = columns.map((_, i) => cells.every((row) => /^[-\d.,×µ%\s[\]–MBs]*$/.test(row[i] ?? '') || row[i] === '–'));
  const line = (row) => '| ' + row.map((cell, i) => (numeric[i] && i > 0 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join(' | ') + ' |';
  return [line(columns), '|' + widths.map((w, i) => (numeric[i] && i > 0 ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|') + '|', ...cells.map(line)].join('\n');
}

/**
 * A floor line: what this machine gives at best for the thing a target bounds, measured in the same
 * run, printed next to that target. Never judged (`ok` undefined, no mark): it explains a target,
 * it is not one. Its label starts with "floor" so the run's target summary shows it as one.
 */
export function floor(label, measured) {
  return { label: `floor  ${label}`, measured, ok: undefined, mark: '', floor: true };
}

export function renderTargets(targets) {
  return targets.map((t) => (t.floor ? `  ${t.label}: ${t.measured}` : `  target  ${t.label}: ${t.measured} ${t.mark}`)).join('\n');
}
