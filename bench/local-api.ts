import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readStackSettings } from '../local/settings.js';

/**
 * The default-region API of a running local stack (`npm start`) and the key benchmarks use:
 * `CDP_API_KEY`, or the demo instance's key kept under the data directory.
 */
export function localApi(): { base: string; key: string } {
  const settings = readStackSettings();
  const key =
    process.env.CDP_API_KEY ??
    (
      JSON.parse(readFileSync(join(settings.dataDir, 'demo-keys.json'), 'utf8')) as {
        default: string;
      }
    ).default;
  return { base: `http://${settings.host}:${settings.port}`, key };
}
