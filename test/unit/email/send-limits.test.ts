import { describe, expect, it } from '@jest/globals';
import { PayloadTooLargeError } from '../../../shared/domain/errors.js';
import { rewriteLinks, scanHtml } from '../../../shared/domain/email/html.js';
import { LIQUID_LIMITS, parseTemplate, RenderBudget } from '../../../shared/domain/email/liquid.js';
import { sendTransactional, type SendEntryResult } from '../../../shared/domain/email/send.js';
import { EMAIL_LIMITS } from '../../../shared/domain/email/send-request.js';
import { withDeadline } from '../../../shared/lib/time-budget.js';
import { MemoryPeopleStore } from '../people/memory-people-store.js';
import { ASSET, sendContext } from './send-context.js';

/**
 * What a hostile request costs: links found in one linear pass that lets
 * other work run, a capped body, one rendering budget for the whole request, and a request
 * that stops building at its deadline and says which emails it did not build.
 */
const recipients = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ fields: { 'str::email': `r${i}@example.com` } }));

/** Whether other work of the process ran while `work` was under way. */
async function othersRanDuring(work: () => Promise<unknown>): Promise<boolean> {
  let running = true;
  let ranDuring = false;
  const timer = setInterval(() => {
    if (running) ranDuring = true;
  }, 0);
  try {
    await work();
  } finally {
    running = false;
    clearInterval(timer);
  }
  return ranDuring;
}

describe('building a hostile email', () => {
  it('finds the links of 900 KB of "<a " in one pass that lets other work run', async () => {
    const hostile = `<p>${'<a '.repeat(300_000)}</p><a href="https://shop.example/x">x</a>`;
    let scan: Awaited<ReturnType<typeof scanHtml>> | undefined;
    expect(
      await othersRanDuring(async () => {
        scan = await scanHtml(hostile);
      }),
    ).toBe(true);
    const { links } = rewriteLinks(
      hostile,
      scan as NonNullable<typeof scan>,
      (i) => `t/${i}`,
      () => false,
    );
    // The run of "<a " is one tag (its attribute names), closed by `</p>`'s `>`: the real
    // link after it is found, as a browser finds it.
    expect(links).toEqual(['https://shop.example/x']);
  });

  it('lets other requests of the process run while it builds many emails of a large body', async () => {
    const { ports, jobs } = sendContext(new MemoryPeopleStore());
    const body = `<html><body>${'<p>Hello <a href="https://shop.example/a">a</a></p>'.repeat(8_000)}</body></html>`;
    let answer: { emails: SendEntryResult[] } | undefined;
    expect(
      await othersRanDuring(async () => {
        answer = await sendTransactional(
          { asset: { ...ASSET, html_body: body }, emails: recipients(3) },
          ports,
        );
      }),
    ).toBe(true);
    expect(answer?.emails.map((entry) => entry.email_status)).toEqual([
      'queued',
      'queued',
      'queued',
    ]);
    expect(jobs).toHaveLength(3);
  });

  it('refuses an html_body over its limit with a 413 naming it, before anyone is merged', async () => {
    const store = new MemoryPeopleStore();
    const { ports } = sendContext(store);
    const html = `<p>${'x'.repeat(EMAIL_LIMITS.htmlBodyBytes)}</p>`;
    const error = await sendTransactional(
      { asset: { ...ASSET, html_body: html }, emails: recipients(1) },
      ports,
    ).catch((cause: unknown) => cause);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as Error).message).toContain('asset.html_body');
    expect(store.people.size).toBe(0);
  });

  it('stops building at the deadline, queues what it built and says which it did not', async () => {
    const harness = sendContext(new MemoryPeopleStore());
    const { jobs } = harness;
    // Each slow email takes a whole slice (100 ms here; the request's rendering time is not
    // what runs out). A 3 s budget keeps its last quarter to queue and record, which leaves
    // time for at most about 22 of the 99: the deadline, not the render budget, stops the
    // build. The margin lets the merge before it take seconds on a loaded machine.
    const ports = { ...harness.ports, renderBudget: new RenderBudget(60_000, 100) };
    const slow = `{% for i in (1..100000) %}{% for j in (1..100000) %}x{% endfor %}{% endfor %}`;
    const answer = await withDeadline(Date.now() + 3_000, () =>
      sendTransactional(
        {
          asset: ASSET,
          emails: [
            ...recipients(1),
            ...recipients(EMAIL_LIMITS.emails)
              .slice(1)
              .map((entry) => ({
                ...entry,
                asset: { ...ASSET, html_body: slow },
              })),
          ],
        },
        ports,
      ),
    );
    const statuses = answer.emails.map((entry) => entry.email_status);
    expect(statuses[0]).toBe('queued');
    expect(jobs).toHaveLength(1);
    const notBuilt = answer.emails.filter((entry) =>
      /not built: the request ran out of time/.test(entry.error ?? ''),
    );
    expect(notBuilt.length).toBeGreaterThanOrEqual(70);
    for (const entry of notBuilt) {
      expect(entry).toMatchObject({ contact_status: 'created', email_status: 'invalid' });
      expect(entry.person_id).toMatch(/^[0-9a-f]{24}$/);
    }
  });

  it('refuses a tracked link with control characters when the email is built', async () => {
    const { ports, jobs } = sendContext(new MemoryPeopleStore());
    const answer = await sendTransactional(
      {
        asset: {
          ...ASSET,
          html_body:
            '<p><a href="https://ok.example/">ok</a> <a href="https://shop.example/&#13;&#10;Set-Cookie:x">x</a></p>',
        },
        emails: recipients(2),
      },
      ports,
    );
    // Refused when built, so never stored nor answered 500 by the click redirect later.
    for (const [index, entry] of answer.emails.entries()) {
      expect(entry).toMatchObject({ contact_status: 'created', email_status: 'invalid' });
      expect(entry.error).toMatch(
        new RegExp(
          `^emails\\[${index}\\]: the link 2 of html_body \\(.*\\) holds control characters`,
        ),
      );
    }
    expect(jobs).toEqual([]);
  });
});

describe('one rendering budget for the whole request', () => {
  const nested = '{% for i in (1..100000) %}{% for j in (1..100000) %}x{% endfor %}{% endfor %}';

  it('spends one budget over every render: once it is gone, the rest fail at once', async () => {
    const template = parseTemplate(nested);
    const budget = new RenderBudget(250, 100);
    const errors: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      errors.push(
        await budget.render(template, {}).then(
          () => 'rendered',
          (error: unknown) => (error as Error).message,
        ),
      );
    }
    // Two slices of 100 ms for the first; the second gets what is left (50 ms), or nothing if
    // the first overran its slices on a busy machine.
    expect(errors[0]).toMatch(/rendering took longer than 100 ms/);
    expect(errors[1]).toMatch(/rendering took longer than \d+ ms|took their 250 ms in all/);
    expect(errors.slice(2)).toEqual(
      Array(4).fill(
        "template error: not rendered: the request's templates took their 250 ms in all",
      ),
    );
    expect(budget.remainingMs).toBe(0);
  });

  it('tries a render that overran its slice once more, and fails one that overruns twice', async () => {
    // The first read of `people.slow` holds the process 150 ms (as a pause of the machine
    // would); the second render finds it quick.
    let held = 0;
    const people = {
      get slow(): string {
        if (held === 0) {
          held += 1;
          const until = performance.now() + 150;
          while (performance.now() < until);
        }
        return 'Ann';
      },
    };
    const template = parseTemplate('{{ people.slow }}{{ people.slow }}!');
    const budget = new RenderBudget(60_000, 100);
    expect(await budget.render(template, { people })).toBe('AnnAnn!');
    expect(held).toBe(1);
    expect(budget.remainingMs).toBeLessThanOrEqual(60_000 - 150);

    // A template slow every time fails after its two slices.
    const slow = new RenderBudget(60_000, 100);
    await expect(slow.render(parseTemplate(nested), {})).rejects.toThrow(
      'template error: rendering took longer than 100 ms',
    );
    expect(slow.remainingMs).toBeLessThanOrEqual(60_000 - 2 * 100);
    expect(RenderBudget.attempts).toBe(2);
  });

  it('bounds a request of 100 recipients with a nested-loop template to its budget', async () => {
    const { ports } = sendContext(new MemoryPeopleStore());
    // A budget of 20 slices: each recipient's body render takes two whole slices (or more).
    const renderBudget = new RenderBudget(20 * 25, 25);
    const answer = await sendTransactional(
      { asset: { ...ASSET, html_body: nested }, emails: recipients(100) },
      { ...ports, renderBudget },
    );
    const timedOut = answer.emails.filter((entry) =>
      /rendering took longer than \d+ ms/.test(entry.error ?? ''),
    );
    const refusedAtOnce = answer.emails.filter((entry) =>
      /took their 500 ms in all/.test(entry.error ?? ''),
    );
    expect(timedOut.length).toBeLessThanOrEqual(10);
    expect(timedOut.length + refusedAtOnce.length).toBe(100);
    expect(renderBudget.remainingMs).toBe(0);
    // The requests' own budget is the documented one.
    expect(new RenderBudget()).toMatchObject({
      totalMs: LIQUID_LIMITS.requestMs,
      sliceMs: LIQUID_LIMITS.renderMs,
    });
  });

  it('gives the event loop back before each render, so a shared process waits one slice at most', async () => {
    const template = parseTemplate(nested);
    const budget = new RenderBudget();
    const order: string[] = [];
    await budget.render(template, {}).catch(() => undefined);
    // Another request's work, due as soon as the event loop is free.
    setImmediate(() => order.push('other request'));
    await budget.render(template, {}).catch(() => undefined);
    order.push('second render');
    expect(order).toEqual(['other request', 'second render']);
  });

  it('refuses a template with more tags than it may parse', () => {
    expect(() => parseTemplate('{{ x }}'.repeat(LIQUID_LIMITS.tags + 1))).toThrow(
      `template error: the template holds ${LIQUID_LIMITS.tags + 1} tags and outputs; at most ${LIQUID_LIMITS.tags} are allowed`,
    );
  });
});
