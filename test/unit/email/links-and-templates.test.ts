import { describe, expect, it } from '@jest/globals';
import { addOpenPixel, rewriteLinks, scanHtml, textOf } from '../../../shared/domain/email/html.js';
import { LinkSigner, messageLinks } from '../../../shared/domain/email/link-tokens.js';
import { singleKeyring } from '../../../shared/domain/signing-keys.js';
import {
  jsonVariables,
  liquidName,
  parseTemplate,
  personVariables,
  renderTemplate,
  TemplateError,
} from '../../../shared/domain/email/liquid.js';
import { FieldCatalog } from '../../../shared/domain/fields/field-catalog.js';

const MESSAGE = '0123456789abcdef01234567';

describe('email link tokens', () => {
  const signer = new LinkSigner(singleKeyring('secret-one'));
  const token = { instanceId: 'demo-co', messageId: MESSAGE, index: 3 };

  it('verifies what it signed, for its purpose only', () => {
    const click = signer.sign('click', token);
    expect(signer.verify('click', click)).toEqual({ ...token, expired: false });
    expect(signer.verify('open', click)).toBeUndefined();
    expect(signer.verify('unsubscribe', click)).toBeUndefined();
  });

  it('refuses tampered, foreign and malformed tokens', () => {
    const click = signer.sign('click', token);
    const [payload, signature] = click.split('.') as [string, string];
    const otherPayload = Buffer.from(`other.${MESSAGE}.3`).toString('base64url');
    expect(signer.verify('click', `${otherPayload}.${signature}`)).toBeUndefined();
    // Another first character of the signature (its last one carries spare bits, below).
    const swapped = signature.startsWith('A') ? 'B' : 'A';
    expect(signer.verify('click', `${payload}.${swapped}${signature.slice(1)}`)).toBeUndefined();
    expect(new LinkSigner(singleKeyring('secret-two')).verify('click', click)).toBeUndefined();
    // The signature's last character carries spare bits: every other spelling is refused.
    const last = signature.at(-1) ?? 'A';
    for (const other of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_') {
      if (other === last) continue;
      expect(
        signer.verify('click', `${payload}.${signature.slice(0, -1)}${other}`),
      ).toBeUndefined();
    }
    for (const bad of [undefined, '', 'a.b.c', 'x'.repeat(300), 42, payload]) {
      expect(signer.verify('click', bad)).toBeUndefined();
    }
  });

  it('builds the links of a message on the public address', () => {
    const links = messageLinks('https://api.example/', signer, 'demo-co', MESSAGE);
    expect(links.click(0)).toMatch(/^https:\/\/api\.example\/t\/c\?t=[\w-]+\.[\w-]+$/);
    expect(links.open()).toMatch(/^https:\/\/api\.example\/t\/o\?t=/);
    expect(links.unsubscribe()).toMatch(/^https:\/\/api\.example\/t\/u\?t=/);
  });
});

describe('email HTML', () => {
  it('rewrites http(s) links in order, decoding entities, and keeps the others', async () => {
    const source = `<a href="https://a.example/?x=1&amp;y=2">A</a><a class="b" href='http://b.example'>B</a><a href="mailto:m@x.example">M</a><a href="#top">T</a><a href="https://keep.example/u">U</a>`;
    const { html, links } = rewriteLinks(
      source,
      await scanHtml(source),
      (index) => `https://t.example/c/${index}`,
      (url) => url === 'https://keep.example/u',
    );
    expect(links).toEqual(['https://a.example/?x=1&y=2', 'http://b.example']);
    expect(html).toBe(
      `<a href="https://t.example/c/0">A</a><a class="b" href='https://t.example/c/1'>B</a><a href="mailto:m@x.example">M</a><a href="#top">T</a><a href="https://keep.example/u">U</a>`,
    );
  });

  it('adds the pixel before </body>, or at the end', () => {
    expect(addOpenPixel('<html><BODY>x</BODY></html>', 'https://p/o')).toMatch(
      /^<html><BODY>x<img src="https:\/\/p\/o"[^>]*\/><\/BODY><\/html>$/,
    );
    expect(addOpenPixel('<p>x</p>', 'https://p/o')).toMatch(/^<p>x<\/p><img /);
  });

  it('derives a text part', () => {
    expect(textOf('<h1>Title</h1><p>Hello <a href="https://x.example">there</a></p>')).toBe(
      'TITLE\n\nHello there [https://x.example]',
    );
  });
});

describe('Liquid', () => {
  const catalog = FieldCatalog.forPerson([{ id: 'str:cm:favourite-colour', name: 'Colour' }]);

  it('names built-in fields in kebab case and custom ones by their name', () => {
    const people = personVariables(
      {
        id: MESSAGE,
        fields: {
          'str::first': 'Ann',
          'str::email': 'ann@example.com',
          'str:cm:favourite-colour': 'teal',
          'geo::city': { name: 'Oslo' },
          'phn::phone': { c: '61', n: '400000000' },
        },
        tags: [],
        created_at: '',
        updated_at: '',
      },
      catalog,
    );
    expect(people).toEqual({
      id: MESSAGE,
      'first-name': 'Ann',
      email: 'ann@example.com',
      city: 'Oslo',
      'phone-number': '+61 400000000',
      custom: { 'favourite-colour': 'teal' },
    });
    expect(liquidName({ custom: false, name: 'last', label: 'Last name' })).toBe('last-name');
  });

  it('overlays json values, reading underscores as hyphens, never touching prototypes', () => {
    const json = jsonVariables(
      { order_id: 'static', shop: 'S' },
      JSON.parse('{"order-id":"entry","__proto__":{"polluted":true}}') as Record<string, unknown>,
    );
    expect(json['order-id']).toBe('entry');
    expect(json.order_id).toBe('static');
    expect(json.shop).toBe('S');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(json)).toBe(Object.prototype);
  });

  it('escapes what it prints into HTML bodies, unless the sender asks for raw', async () => {
    const name = '<a href="https://evil.example">Reset</a>';
    const body = parseTemplate('<p>{{ people.first-name }}</p>{{ json.banner | raw }}', 'html');
    expect(
      await renderTemplate(body, {
        people: { 'first-name': name },
        json: { banner: '<b>Sale</b>' },
      }),
    ).toBe('<p>&lt;a href=&#34;https://evil.example&#34;&gt;Reset&lt;/a&gt;</p><b>Sale</b>');
    const subject = parseTemplate('Hi {{ people.first-name }}', 'text');
    expect(await renderTemplate(subject, { people: { 'first-name': 'A & B' } })).toBe('Hi A & B');
  });

  it('renders with filters and refuses what templates must not do', async () => {
    const template = parseTemplate('{{ people.first-name | default: "friend" }} {{ json.a }}');
    expect(await renderTemplate(template, { people: {}, json: { a: 1 } })).toBe('friend 1');
    expect(() => parseTemplate('{{ x | nosuch }}')).toThrow(TemplateError);
    expect(() => parseTemplate('{% if %}')).toThrow(TemplateError);
    await expect(renderTemplate(parseTemplate('{% include "file" %}'), {})).rejects.toThrow(
      TemplateError,
    );
    await expect(
      renderTemplate(parseTemplate('{% for i in (1..100000000) %}{{ i }}{% endfor %}'), {}),
    ).rejects.toThrow(/template error/);
  });
});
