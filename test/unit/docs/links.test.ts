import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/**
 * Every link of README.md and docs/ resolves: a relative link names a file of the repository,
 * and its `#fragment`, if any, a heading of that file (GitHub's anchors: lower case, spaces
 * as dashes, punctuation dropped). Links to the web are not fetched.
 */
const DOCUMENTS = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name)),
];

/** GitHub's anchor of a heading. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = anchorOf(heading[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The links of a Markdown file outside code: `[text](target)`. */
function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] ?? '');
}

describe('documentation links', () => {
  it('every relative link of README.md and docs/ names a file and a heading that exist', () => {
    const broken: string[] = [];
    for (const document of DOCUMENTS) {
      for (const link of linksOf(document)) {
        if (/^[a-z]+:/i.test(link)) continue; // the web, mail
        const [path = '', fragment] = link.split('#');
        const target = path === '' ? document : normalize(join(dirname(document), path));
        if (!existsSync(target)) {
          broken.push(`${document}: ${link} (no ${target})`);
          continue;
        }
        if (fragment !== undefined && target.endsWith('.md') && !anchorsOf(target).has(fragment)) {
          broken.push(`${document}: ${link} (no heading #${fragment} in ${target})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds the links it checks', () => {
    expect(DOCUMENTS.length).toBeGreaterThan(5);
    expect(DOCUMENTS.flatMap(linksOf).length).toBeGreaterThan(10);
  });
});
