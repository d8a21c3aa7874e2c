/**
 * `npm run bench`: the figures of docs/benchmarks.md, each against a fresh local stack of its own
 * (bench/lib/stack.ts: ports 6300, 9600, 6350, 9605, stopped by its PID after the figure:
 * DynamoDB Local's stream reads slow as its streams grow, so a figure run on a stack others
 * had filled measured their leftovers, and figure 3 ran out of time after figures 1 and 2), one
 * table printed with its numbered notes (bench/lib/render.ts), and the same written to
 * docs/benchmarks.md with the machine it ran on (between the `bench:start` and `bench:end`
 * markers; the text around them stays). Never
 * part of `npm test`. Each figure also runs alone: `node --import tsx bench/<figure>.ts`.
 *
 *   npm run bench                     # all figures, 16-30 minutes on 2 quiet cores
 *   npm run bench -- 1,2              # some figures only (their numbers)
 *   BENCH_SCALE=0.5 npm run bench     # fewer requests per figure (quicker, noisier)
 *   CDP_FAULTS=conflict=0.2 npm run bench    # the stack's DynamoDB calls meet faults
 */
import { cpus, loadavg, release, totalmem } from 'node:os';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { activitiesFigure } from './activities.js';
import { coldStartFigure } from './cold-start.js';
import { computeFigure } from './compute.js';
import { costFigure } from './cost.js';
import { listingFigure } from './person-get.js';
import { personMergeFigure } from './person-merge.js';
import { render, type FigureResult } from './lib/render.js';
import { benchPortsFreed, withBenchStack, type BenchStack } from './lib/stack.js';
import { transactionalFigure } from './transactional-send.js';

const FIGURES: {
  n: number;
  name: string;
  run: (stack: BenchStack) => Promise<FigureResult>;
  /** Figure 5 measures the domain alone, with no stack. */
  alone?: () => Promise<FigureResult>;
}[] = [
  { n: 5, name: 'compute per record', run: () => computeFigure(), alone: computeFigure },
  { n: 1, name: 'person merge', run: personMergeFigure },
  { n: 2, name: 'activities', run: activitiesFigure },
  { n: 3, name: 'transactional send', run: transactionalFigure },
  { n: 7, name: 'cost', run: costFigure },
  { n: 6, name: 'cold start', run: coldStartFigure },
  { n: 4, name: 'listing growth', run: listingFigure },
];

const wanted = process.argv[2]?.split(',').map(Number);
const chosen = FIGURES.filter((figure) => !wanted || wanted.includes(figure.n));
const started = Date.now();
const loadBefore = loadavg();

const results: { n: number; result: FigureResult }[] = [];
for (const figure of chosen) {
  const t0 = Date.now();
  console.error(`bench: figure ${figure.n}, ${figure.name}…`);
  try {
    const result = figure.alone ? await figure.alone() : await withBenchStack(figure.run);
    results.push({ n: figure.n, result });
  } catch (error) {
    // One figure failing does not lose the others: its row says so, its note what happened.
    console.error(error);
    const message = String(error instanceof Error ? error.message : error).slice(0, 300);
    results.push({
      n: figure.n,
      result: {
        rows: [
          {
            figure: `${figure.n} ${figure.name}`,
            measure: 'FAILED',
            value: 'no figure',
            notes: [`${figure.name} failed: ${message}`],
          },
        ],
        notes: [],
      },
    });
  }
  // The next figure's stack starts on the same ports.
  if (!figure.alone) await benchPortsFreed();
  console.error(`bench: figure ${figure.n} took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
results.sort((a, b) => a.n - b.n);

const minutes = (Date.now() - started) / 60_000;
const cpu = cpus();
const machine = [
  `Run on ${new Date(started).toISOString().slice(0, 16).replace('T', ' ')} UTC in ${minutes.toFixed(1)} min`,
  `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GB, Linux ${release()}, Node.js ${process.version}`,
  `load average ${loadBefore.map((l) => l.toFixed(1)).join(' / ')} at the start, ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')} at the end (1/5/15 min; above ${cpu.length} the machine was shared)`,
  `CDP_FAULTS=${process.env.CDP_FAULTS || '(none)'}, BENCH_SCALE=${process.env.BENCH_SCALE ?? '1'}, figures ${chosen.map((f) => f.n).join(', ')}`,
];
const report = [`${machine.join('; ')}.`, '', render(results.map((r) => r.result))].join('\n');
console.log(`\n${report}\n`);

// The rows and notes as measured, beside the table (`.bench/` is not committed): a change of the
// table's layout (bench/lib/render.ts) can be tried on them without running the figures again.
const raw = resolve(import.meta.dirname, '..', '.bench', 'last-run.json');
mkdirSync(dirname(raw), { recursive: true });
writeFileSync(raw, `${JSON.stringify({ machine, results }, null, 2)}\n`);

const doc = resolve(import.meta.dirname, '..', 'docs', 'benchmarks.md');
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';
let text: string;
try {
  text = readFileSync(doc, 'utf8');
} catch {
  text = `# Benchmarks\n\n${START}\n${END}\n`;
}
const from = text.indexOf(START);
const to = text.indexOf(END);
text =
  from >= 0 && to > from
    ? `${text.slice(0, from + START.length)}\n${report}\n${text.slice(to)}`
    : `${text}\n${START}\n${report}\n${END}\n`;
writeFileSync(doc, text);
console.error(`bench: written to ${join('docs', 'benchmarks.md')}`);
