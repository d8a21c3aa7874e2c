import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { HEADER, MEASURE_MAX, render, type FigureResult } from '../../../bench/lib/render.js';

/** The cells of a Markdown table row. */
const cells = (line: string) =>
  line
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());

describe('the benchmark table (bench/lib/render.ts)', () => {
  const figures: FigureResult[] = [
    {
      rows: [
        {
          figure: '1 person merge',
          measure: 'new people/s, c=1',
          value: '399/s',
          reference: '323/s',
          ratio: 1.2345,
          target: '≥ 1',
          met: true,
          notes: ['c=1: p50/p95/p99 246/298/298 ms'],
        },
        {
          figure: '1 person merge',
          measure: 'updated people/s, c=1',
          value: '720/s',
          reference: '559/s',
          ratio: 0.5,
          target: '≥ 1',
          met: false,
          notes: ['c=1: p50/p95/p99 246/298/298 ms'],
        },
        {
          figure: '1 person merge',
          measure: 'async new people/s, drain alone',
          value: '353/s',
          reference: '353/s sync, c=5',
          ratio: 1,
          notes: ['How a drain alone runs.', 'Its cycles | one\nper line'],
        },
      ],
      notes: ['Person merge: the method.'],
    },
    {
      rows: [
        {
          figure: '2 activities',
          measure: 'async activities/s, drain alone',
          value: '3537/s',
          notes: ['How a drain alone runs.'],
        },
      ],
      notes: [],
    },
  ];

  it('gives each row one line of the seven columns, its notes numbered under the table', () => {
    expect(render(figures).split('\n')).toEqual([
      ...HEADER,
      '| 1 person merge | new people/s, c=1 [2] | 399/s | 323/s | 1.23 | ≥ 1 | yes |',
      '| 1 person merge | updated people/s, c=1 [2] | 720/s | 559/s | 0.50 | ≥ 1 | no |',
      '| 1 person merge | async new people/s, drain alone [3, 4] | 353/s | 353/s sync, c=5 | 1.00 |  |  |',
      '| 2 activities | async activities/s, drain alone [3] | 3537/s |  |  |  |  |',
      '',
      '1. Person merge: the method.',
      '2. c=1: p50/p95/p99 246/298/298 ms',
      '3. How a drain alone runs.',
      '4. Its cycles \\| one per line',
    ]);
  });

  it('has no notes section when no figure has notes', () => {
    const rows = [{ figure: '5 compute', measure: 'CPU per new person', value: '58 µs' }];
    expect(render([{ rows, notes: [] }])).toBe(
      [...HEADER, '| 5 compute | CPU per new person | 58 µs |  |  |  |  |'].join('\n'),
    );
  });
});

describe('the generated block of docs/benchmarks.md', () => {
  const text = readFileSync('docs/benchmarks.md', 'utf8');
  const block = text.slice(
    text.indexOf('<!-- bench:start -->'),
    text.indexOf('<!-- bench:end -->') + '<!-- bench:end -->'.length,
  );
  const lines = block.split('\n');
  const rows = lines.filter((line) => line.startsWith('| ') && !/^\| -/.test(line)).slice(1);

  it('is short: table, notes and machine line in about 115 lines', () => {
    expect(rows.length).toBeGreaterThan(10);
    expect(lines.length).toBeLessThanOrEqual(117);
  });

  it('keeps each measure to a few words, its note numbers aside', () => {
    const long = rows
      .map((row) => (cells(row)[1] ?? '').replace(/ \[[\d, ]+\]$/, ''))
      .filter((measure) => measure.length > MEASURE_MAX);
    expect(long).toEqual([]);
  });

  it('sets no target on the async drains (they measure DynamoDB Local, not the platform)', () => {
    const drains = rows.map(cells).filter((row) => /^async /.test(row[1] ?? ''));
    expect(drains.length).toBeGreaterThan(0);
    for (const row of drains) expect([row[5], row[6]]).toEqual(['', '']);
  });
});
