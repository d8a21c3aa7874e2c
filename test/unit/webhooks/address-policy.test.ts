import { describe, expect, it } from '@jest/globals';
import {
  checkWebhookUrl,
  refusedAddress,
  type HostResolver,
} from '../../../shared/domain/webhooks/address-policy.js';
import { ValidationError } from '../../../shared/domain/errors.js';

const deployment = { allowLoopback: false };
const localStack = { allowLoopback: true };
const resolver =
  (table: Record<string, string[]>): HostResolver =>
  (host) =>
    Promise.resolve(table[host] ?? []);

describe('refusedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.1.1',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.251',
    '239.255.255.250',
    '255.255.255.255',
    '::',
    '::1',
    'fd00:ec2::254',
    'fc00::1',
    'fe80::1',
    'ff02::1',
    '[::1]',
  ])('refuses %s on a deployment', (address) => {
    expect(refusedAddress(address, deployment)).toMatch(/loopback, private/);
  });

  it.each([
    ['::ffff:127.0.0.1', 'IPv4-mapped, dotted', /embeds the IPv4 address 127\.0\.0\.1/],
    ['::ffff:169.254.169.254', 'IPv4-mapped, the metadata service', /169\.254\.169\.254/],
    [
      '::ffff:8.8.8.8',
      'IPv4-mapped, even of a public address',
      /embeds the IPv4 address 8\.8\.8\.8/,
    ],
    ['::ffff:7f00:1', 'IPv4-mapped, in hextets', /embeds the IPv4 address 127\.0\.0\.1/],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated (SIIT)', /embeds the IPv4 address 169\.254\.169\.254/],
    ['::7f00:1', 'IPv4-compatible', /embeds the IPv4 address 127\.0\.0\.1/],
    ['::127.0.0.1', 'IPv4-compatible, dotted', /embeds the IPv4 address 127\.0\.0\.1/],
    [
      '64:ff9b::a9fe:a9fe',
      'NAT64, well-known prefix',
      /embeds the IPv4 address 169\.254\.169\.254/,
    ],
    ['64:ff9b:1::a00:1', 'NAT64, local-use prefix', /embeds the IPv4 address 10\.0\.0\.1/],
    ['2002:a9fe:a9fe::1', '6to4', /6to4/],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo', /Teredo/],
    ['2001:2::1', 'benchmarking (IETF assignments)', /IETF protocol assignment/],
    ['2001:db8::1', 'documentation', /documentation/],
    ['3fff::1', 'documentation (2024)', /documentation/],
    ['fec0::1', 'site-local', /not a global unicast address/],
    ['fd00:ec2::254', 'the metadata service', /not a global unicast address/],
    ['100::1', 'discard', /not a global unicast address/],
    ['4000::1', 'outside 2000::/3', /not a global unicast address/],
    ['[::ffff:0:a9fe:a9fe]', 'bracketed, as in a URL', /169\.254\.169\.254/],
  ])('refuses %s (%s)', (address, _form, why) => {
    expect(refusedAddress(address, deployment)).toMatch(why);
    expect(refusedAddress(address, localStack)).toMatch(why);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:82b::200e',
    '2001:4860:4860::8888',
  ])('allows the public address %s', (address) => {
    expect(refusedAddress(address, deployment)).toBeUndefined();
  });

  it('allows 127.0.0.1 only where the local stack says so, and no other loopback address', () => {
    expect(refusedAddress('127.0.0.1', localStack)).toBeUndefined();
    expect(refusedAddress('127.0.0.2', localStack)).toBeDefined();
    expect(refusedAddress('::1', localStack)).toBeDefined();
    expect(refusedAddress('10.0.0.1', localStack)).toBeDefined();
  });
});

describe('checkWebhookUrl', () => {
  const publicDns = resolver({
    'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'sneaky.example.com': ['93.184.215.14', '10.0.0.7'],
    'metadata.example.com': ['169.254.169.254'],
    localhost: ['127.0.0.1', '::1'],
  });

  it('accepts an https URL whose every address is public', async () => {
    const url = await checkWebhookUrl('https://hooks.example.com/cdp?x=1', deployment, publicDns);
    expect(url.toString()).toBe('https://hooks.example.com/cdp?x=1');
  });

  it.each([
    ['http://hooks.example.com/cdp', 'expected an https URL'],
    ['http://127.0.0.1:8080/cdp', 'expected an https URL'],
    ['ftp://hooks.example.com/', 'expected an https URL'],
    ['hooks.example.com/cdp', 'expected an absolute URL'],
    ['https://sneaky.example.com/', '10.0.0.7'],
    ['https://metadata.example.com/', '169.254.169.254'],
    ['https://localhost/', '127.0.0.1'],
    ['https://unknown.example.com/', 'does not resolve'],
    ['https://user:secret@hooks.example.com/', 'credentials'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ['https://[fd00:ec2::254]/', 'fd00:ec2::254'],
  ])('refuses %s on a deployment (%s), naming url', async (raw, message) => {
    const refusal = checkWebhookUrl(raw, deployment, publicDns);
    await expect(refusal).rejects.toThrow(ValidationError);
    await expect(refusal).rejects.toThrow(/^url: /);
    await expect(refusal).rejects.toThrow(message);
  });

  it('allows http://127.0.0.1 on the local stack only, never a name for it', async () => {
    await expect(
      checkWebhookUrl('http://127.0.0.1:15000/hook', localStack, publicDns),
    ).resolves.toBeInstanceOf(URL);
    await expect(checkWebhookUrl('http://localhost:15000/', localStack, publicDns)).rejects.toThrow(
      /url: /,
    );
    await expect(checkWebhookUrl('http://10.0.0.1/', localStack, publicDns)).rejects.toThrow(
      /url: /,
    );
  });
});
