/**
 * The table `npm run bench` prints and writes to docs/benchmarks.md, and the numbered notes
 * under it. Pure: no stack, no clock, so that its shape is tested on its own
 * (test/unit/bench/render.test.ts).
 *
 * A row says what was measured in a few words (`measure`, at most `MEASURE_MAX` characters),
 * its value, the ceiling or reference measured in the same run, their ratio and the target.
 * What a reader needs to trust it (latencies, each round's ratio, CPU per record, how a run
 * was made) goes into its `notes`: each becomes a numbered note under the table, the row's
 * measure ends with the numbers (`[3, 4]`), and rows with the same note share its number. A
 * figure's own notes (its method) come first among its notes, unreferenced.
 */

/** One row of the table. */
export interface Row {
  figure: string;
  /** What was measured, in a few words ("new people/s, c=4"). */
  measure: string;
  value: string;
  /** The store's ceiling or the reference measured in the same run. */
  reference?: string;
  ratio?: number;
  target?: string;
  /** Whether the target is met (undefined: no target). */
  met?: boolean;
  /** Details behind the row, each a numbered note under the table. */
  notes?: string[];
}

/** What a figure reports: its rows, and its notes (its method). */
export interface FigureResult {
  rows: Row[];
  notes: string[];
}

/** The longest measure a row should have (its note numbers not counted). */
export const MEASURE_MAX = 60;

export function fixed(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

export const HEADER = [
  '| Figure | Measure | Value | Ceiling / reference | Ratio | Target | Met |',
  '| --- | --- | --- | --- | --- | --- | --- |',
];

/** A table cell: one line, no column breaks. */
const cell = (text: string) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** The figures' rows as one Markdown table, and their notes numbered under it. */
export function render(figures: FigureResult[]): string {
  const numbers = new Map<string, number>();
  const notes: string[] = [];
  const numberOf = (note: string) => {
    const text = cell(note.trim());
    let n = numbers.get(text);
    if (n === undefined) {
      notes.push(text);
      n = notes.length;
      numbers.set(text, n);
    }
    return n;
  };
  const lines = [...HEADER];
  for (const figure of figures) {
    for (const note of figure.notes) numberOf(note);
    for (const row of figure.rows) {
      const refs = [...new Set((row.notes ?? []).map(numberOf))];
      const measure = refs.length > 0 ? `${row.measure} [${refs.join(', ')}]` : row.measure;
      const ratio = row.ratio === undefined ? '' : fixed(row.ratio, 2);
      const met = row.met === undefined ? '' : row.met ? 'yes' : 'no';
      lines.push(
        `| ${[row.figure, measure, row.value, row.reference ?? '', ratio, row.target ?? '', met]
          .map(cell)
          .join(' | ')} |`,
      );
    }
  }
  if (notes.length === 0) return lines.join('\n');
  return [...lines, '', ...notes.map((note, i) => `${i + 1}. ${note}`)].join('\n');
}
