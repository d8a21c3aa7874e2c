/**
 * `npm run lint:cfn`: AWS's CloudFormation linter (cfn-lint, from PyPI) over every template
 * the app synthesizes, the way a deploy would check them against the resource specification:
 * each region's data and API stacks with their nested stacks, and the deploy pipeline with its
 * stages. cfn-lint is installed on first use into `.venv/cfn-lint` (ignored by git), at the
 * versions `infra/cfn-lint.requirements.txt` pins; `.cfnlintrc.yaml` names the rules left out
 * and why. Exits 1 on any finding. With `--prepare` it only installs cfn-lint.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { App } from 'aws-cdk-lib';
import { EXAMPLE_PIPELINE } from '../stacks/pipeline-stack.js';
import { buildApp } from './app.js';

const root = resolve(import.meta.dirname, '..', '..');
const venv = join(root, '.venv', 'cfn-lint');
const requirements = join(root, 'infra', 'cfn-lint.requirements.txt');
const cfnLint = join(venv, 'bin', 'cfn-lint');
const outdir = join(root, 'cdk.out', 'cfn-lint');

function pinnedVersion(): string {
  const line = readFileSync(requirements, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('cfn-lint=='));
  if (!line) throw new Error(`${requirements} pins no cfn-lint`);
  return line.slice('cfn-lint=='.length).trim();
}

/** cfn-lint at the pinned version, installed into the project's virtual environment. */
function ensureCfnLint(): void {
  const version = pinnedVersion();
  if (existsSync(cfnLint)) {
    const installed = spawnSync(cfnLint, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (installed === `cfn-lint ${version}`) return;
  }
  console.log(`cfn-lint ${version}: installing into ${relative(root, venv)}`);
  rmSync(venv, { recursive: true, force: true });
  const python = process.env.PYTHON ?? 'python3';
  execFileSync(python, ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(
    join(venv, 'bin', 'pip'),
    ['install', '--quiet', '--disable-pip-version-check', '--no-deps', '-r', requirements],
    { stdio: 'inherit' },
  );
}

/** Synthesizes the app with this extra context (functions not bundled: same templates). */
function synthesize(name: string, context: Record<string, unknown>): string {
  const dir = join(outdir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const { context: cdkContext } = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({
    outdir: dir,
    context: { ...cdkContext, 'aws:cdk:bundling-stacks': [], ...context },
  });
  buildApp(app).synth();
  return dir;
}

function templatesIn(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return templatesIn(path);
    return entry.name.endsWith('.template.json') ? [path] : [];
  });
}

ensureCfnLint();
// `--prepare`: only the virtual environment (CI makes it while other steps run).
if (process.argv.includes('--prepare')) process.exit(0);
const templates = [
  ...templatesIn(synthesize('direct', {})),
  ...templatesIn(synthesize('pipeline', { pipeline: EXAMPLE_PIPELINE })),
];
console.log(`cfn-lint ${pinnedVersion()}: ${templates.length} templates`);
const result = spawnSync(cfnLint, templates, { cwd: root, stdio: 'inherit' });
if (result.status === 0) console.log('cfn-lint: no findings');
process.exit(result.status ?? 1);
