import { describe, expect, it } from 'vitest';
import { checkNetHost } from '../../src/screen/index.js';

const blocked = (raw: string) => ({
  ok: false,
  code: 'permission.net-blocked',
  message: `Blocked domain: ${raw}. Private/local networks not allowed.`,
});
const ipLiteral = (raw: string) => ({
  ok: false,
  code: 'permission.net-blocked',
  message: `IP address literals are not allowed in network domains: ${JSON.stringify(raw)}; declare a host name`,
});
const invalid = (message: string) => ({ ok: false, code: 'permission.net', message });

describe('checkNetHost: accepted and normalised', () => {
  it.each([
    ['api.example.com', 'api.example.com'],
    ['API.Example.COM', 'api.example.com'],
    ['api.example.com.', 'api.example.com'],
    ['*.example.com', '*.example.com'],
    ['*.Example.co.uk', '*.example.co.uk'],
    ['example.com:8443', 'example.com:8443'],
    ['example.com:1', 'example.com:1'],
    ['example.com:65535', 'example.com:65535'],
    ['api10.example.com', 'api10.example.com'], // upstream's substring check wrongly blocked this
    ['10x.example.com', '10x.example.com'],
    ['bücher.de', 'xn--bcher-kva.de'],
    ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
    ['user.github.io', 'user.github.io'],
    ['github.io', 'github.io'],
    [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
  ])('%s -> %s', (raw, host) => {
    expect(checkNetHost(raw)).toEqual({ ok: true, host });
  });
});

describe('checkNetHost: IP literals in every spelling', () => {
  it.each([
    '127.0.0.1',
    '127.1',
    '2130706433',
    '0x7f.0.0.1',
    '0x7f000001',
    '0177.0.0.1',
    '127.0.0.1.',
    '10.0.0.8',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '0',
    '224.0.0.1',
    '::1',
    '[::1]',
    '[::1]:8080',
    '::',
    '[::]',
    '::ffff:127.0.0.1',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[fe80::1]',
    '[fd00::1]',
    '[64:ff9b::10.0.0.1]',
    '[2001:db8::1]',
    '127.0.0.1:80',
  ])('private %s -> Blocked domain (RCRT parity)', (raw) => {
    expect(checkNetHost(raw)).toEqual(blocked(raw));
  });

  it.each([
    '8.8.8.8',
    '8.8.8.8:443',
    '134744072',
    '0x8.0x8.0x8.0x8',
    '2606:4700:4700::1111',
    '[2606:4700:4700::1111]:443',
    '1.2.3.4.5',
    '256.1.1.1',
  ])('public or unusable %s -> IP literal error', (raw) => {
    expect(checkNetHost(raw)).toEqual(ipLiteral(raw));
  });
});

describe('checkNetHost: private and special-use names', () => {
  it.each([
    'localhost',
    'LOCALHOST',
    'localhost:3000',
    'app.localhost',
    '*.localhost',
    'printer.local',
    'metadata.google.internal',
    'router.home.arpa',
    'nas.lan',
    'db.corp',
    'x.home',
    'x.intranet',
    'box.localdomain',
    '1.0.0.127.in-addr.arpa',
    'example.test',
    'x.invalid',
    'x.example',
    'abc.onion',
    'myserver',
    'host.unknowntld',
  ])('%s -> Blocked domain', (raw) => {
    expect(checkNetHost(raw)).toEqual(blocked(raw));
  });
});

describe('checkNetHost: malformed entries', () => {
  it.each([
    [42, 'Network domain must be a string, got 42'],
    [null, 'Network domain must be a string, got null'],
    [{ host: 'x.com' }, 'Network domain must be a string, got {"host":"x.com"}'],
    ['', 'Network domain must not be empty'],
    [
      'https://api.example.com',
      'Network domain must be a bare host name without scheme or path: "https://api.example.com"',
    ],
    ['api.example.com/v1', 'Network domain must be a bare host name without scheme or path: "api.example.com/v1"'],
    ['user@api.example.com', 'Network domain must be a bare host name without scheme or path: "user@api.example.com"'],
    ['api.example.com?x', 'Network domain must be a bare host name without scheme or path: "api.example.com?x"'],
    ['api .example.com', 'Network domain must be a bare host name without scheme or path: "api .example.com"'],
    ['example.com:0', 'Invalid port in network domain: "example.com:0" (must be 1-65535)'],
    ['example.com:65536', 'Invalid port in network domain: "example.com:65536" (must be 1-65535)'],
    ['example.com:080', 'Invalid port in network domain: "example.com:080" (must be 1-65535)'],
    ['example.com:', 'Invalid port in network domain: "example.com:" (must be 1-65535)'],
    ['example.com:http', 'Invalid port in network domain: "example.com:http" (must be 1-65535)'],
    ['a..example.com', 'Empty label in network domain: "a..example.com"'],
    ['.example.com', 'Empty label in network domain: ".example.com"'],
    ['example.com..', 'Empty label in network domain: "example.com.."'],
    [`${'a'.repeat(64)}.com`, `Label longer than 63 characters in network domain: "${'a'.repeat(64)}.com"`],
    ['a.*.example.com', 'Wildcards are only allowed as a leading "*." in network domains: "a.*.example.com"'],
    ['*example.com', 'Wildcards are only allowed as a leading "*." in network domains: "*example.com"'],
    ['*.*.example.com', 'Wildcards are only allowed as a leading "*." in network domains: "*.*.example.com"'],
    ['*', 'Wildcards are only allowed as a leading "*." in network domains: "*"'],
    [
      'a_b.example.com',
      'Invalid host name in network domain: "a_b.example.com" (labels are letters, digits and inner hyphens)',
    ],
    [
      '-a.example.com',
      'Invalid host name in network domain: "-a.example.com" (labels are letters, digits and inner hyphens)',
    ],
    [
      'a-.example.com',
      'Invalid host name in network domain: "a-.example.com" (labels are letters, digits and inner hyphens)',
    ],
    ['com', 'Network domain is a public suffix: "com"; name a registrable domain such as "example.com"'],
    ['co.uk', 'Network domain is a public suffix: "co.uk"; name a registrable domain such as "example.co.uk"'],
    ['*.com', 'Network domain is a public suffix: "*.com"; name a registrable domain such as "example.com"'],
    ['*.co.uk', 'Network domain is a public suffix: "*.co.uk"; name a registrable domain such as "example.co.uk"'],
    ['*.github.io', 'Wildcard network domain covers a shared public suffix: "*.github.io"'],
  ])('%j', (raw, message) => {
    expect(checkNetHost(raw)).toEqual(invalid(message));
  });

  it('rejects a name over 253 characters', () => {
    const raw = `${'a'.repeat(60)}.`.repeat(4) + 'example.com'; // 255 characters
    expect(raw).toHaveLength(255);
    // Long values are quoted cut to 120 characters so a message never floods a response.
    const quoted = JSON.stringify(raw).slice(0, 119) + '…';
    expect(checkNetHost(raw)).toEqual(invalid(`Network domain longer than 253 characters: ${quoted}`));
    expect(checkNetHost(raw.slice(2))).toEqual({ ok: true, host: raw.slice(2) });
  });
});
