import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import chromium, { inflate } from '@sparticuz/chromium';

/**
 * The Chromium the browser tests drive, with no manual step on a fresh machine:
 *
 * 1. `CHROMIUM_PATH`, when set;
 * 2. else the system's Chromium (`/usr/bin/chromium`, Debian's package), when it runs;
 * 3. else the Chromium that `npm install` brought: `@sparticuz/chromium` ships a headless
 *    Linux x86-64 build inside the package (brotli-compressed, unpacked into the temporary
 *    directory on first use, nothing downloaded), with the shared libraries it needs (NSS,
 *    NSPR, expat: the Amazon Linux 2023 set the package carries for Lambda) and fonts, which
 *    the browser is pointed at so that it needs nothing from the system.
 */
export interface Browser {
  executablePath: string;
  /** Extra environment of the browser process. */
  env: Record<string, string>;
  /** Where it came from, for messages. */
  source: string;
}

const SYSTEM_CHROMIUM = '/usr/bin/chromium';

function runs(executable: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const result = spawnSync(executable, ['--headless', '--no-sandbox', '--version'], {
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return result.status === 0 && /Chromium|Chrome/.test(result.stdout);
}

/** The package's directory of compressed files (`bin/`: chromium.br, al2023.tar.br, …). */
function packagedBin(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(dirname(require.resolve('@sparticuz/chromium'))), 'bin');
}

async function packagedChromium(): Promise<Browser> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `The packaged Chromium is for Linux x86-64 (this is ${process.platform} ${process.arch}): ` +
        `install a Chromium and set CHROMIUM_PATH`,
    );
  }
  const bin = packagedBin();
  const executablePath = await chromium.executablePath(bin);
  // The libraries and fonts of the package, unpacked beside the browser (idempotent).
  await inflate(join(bin, 'al2023.tar.br'));
  await inflate(join(bin, 'fonts.tar.br'));
  const libraries = join(tmpdir(), 'al2023', 'lib');
  const env = {
    LD_LIBRARY_PATH: [libraries, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
    FONTCONFIG_PATH: join(tmpdir(), 'fonts'),
  };
  if (!runs(executablePath, { ...process.env, ...env })) {
    throw new Error(`The packaged Chromium at ${executablePath} does not start`);
  }
  return { executablePath, env, source: '@sparticuz/chromium' };
}

export async function findChromium(): Promise<Browser> {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) {
    if (!existsSync(chosen)) throw new Error(`CHROMIUM_PATH=${chosen}: no such file`);
    return { executablePath: chosen, env: {}, source: 'CHROMIUM_PATH' };
  }
  if (existsSync(SYSTEM_CHROMIUM) && runs(SYSTEM_CHROMIUM)) {
    return { executablePath: SYSTEM_CHROMIUM, env: {}, source: 'the system' };
  }
  return packagedChromium();
}
