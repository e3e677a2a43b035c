import { describe, expect, it } from 'vitest';
import { FFI_MESSAGE, HRTIME_MESSAGE, validatePermissions, type PermissionOptions } from '../../src/screen/index.js';

const AGENT: PermissionOptions = { origin: 'agent', maxNetDomains: 5, bootstrapAllow: [] };
const BOOTSTRAP: PermissionOptions = { origin: 'bootstrap', maxNetDomains: 5, bootstrapAllow: ['read', 'env', 'ffi'] };
const EMPTY = { errors: [], warnings: [], net: [], api: false, extraPermissions: [], privateNet: [] };

describe('validatePermissions: no permissions', () => {
  it.each([
    [undefined],
    [null],
    [{}],
    [
      {
        net: false,
        read: false,
        write: false,
        env: false,
        run: false,
        ffi: false,
        sys: false,
        hrtime: false,
        api: false,
      },
    ],
    [{ net: [], read: [], env: null }],
  ])('grants nothing for %j', (permissions) => {
    expect(validatePermissions(permissions, AGENT)).toEqual(EMPTY);
  });

  it.each([[[]], ['net'], [42]])('rejects a permissions value that is not an object: %j', (permissions) => {
    expect(validatePermissions(permissions, AGENT).errors).toEqual([
      {
        code: 'permission.invalid',
        path: '/permissions',
        message: `permissions must be an object, got ${JSON.stringify(permissions)}`,
      },
    ]);
  });

  it('rejects unknown keys, naming them', () => {
    expect(validatePermissions({ netx: ['a.com'], 'a/b': true }, AGENT).errors).toEqual([
      { code: 'permission.unknown', path: '/permissions/netx', message: 'Unknown permission "netx"' },
      { code: 'permission.unknown', path: '/permissions/a~1b', message: 'Unknown permission "a/b"' },
    ]);
  });
});

describe('validatePermissions: net', () => {
  it('normalises, de-duplicates (with a warning) and keeps ports as written', () => {
    const result = validatePermissions(
      { net: ['API.example.com', 'api.example.com.', '*.cdn.example.org', 'example.net:8443'] },
      AGENT,
    );
    expect(result).toEqual({
      ...EMPTY,
      warnings: [
        {
          code: 'permission.net-duplicate',
          path: '/permissions/net/1',
          message: 'Duplicate network domain "api.example.com" ignored',
        },
      ],
      net: ['api.example.com', '*.cdn.example.org', 'example.net:8443'],
    });
  });

  it('refuses net: true (the sandbox only runs with an explicit allow list)', () => {
    expect(validatePermissions({ net: true }, AGENT).errors).toEqual([
      {
        code: 'permission.net',
        path: '/permissions/net',
        message: 'Unrestricted network access (net: true) is not allowed; list the host names the tool needs',
      },
    ]);
  });

  it.each([['example.com'], [{ 0: 'a.com' }], [1]])(
    'refuses a net value that is neither false nor an array: %j',
    (net) => {
      expect(validatePermissions({ net }, AGENT).errors).toEqual([
        {
          code: 'permission.net',
          path: '/permissions/net',
          message: `permissions.net must be false or an array of host names, got ${JSON.stringify(net)}`,
        },
      ]);
    },
  );

  it('counts domains against maxNetDomains with the RCRT message, and still checks each entry', () => {
    const net = ['a.example.com', 'b.example.com', 'c.example.com', 'localhost'];
    const result = validatePermissions({ net }, { ...AGENT, maxNetDomains: 3 });
    expect(result.errors).toEqual([
      { code: 'permission.net-count', path: '/permissions/net', message: 'Too many network domains (4). Maximum: 3' },
      {
        code: 'permission.net-blocked',
        path: '/permissions/net/3',
        message: 'Blocked domain: localhost. Private/local networks not allowed.',
      },
    ]);
    expect(result.net).toEqual(['a.example.com', 'b.example.com', 'c.example.com']);
  });

  it('accepts exactly maxNetDomains domains and reports each bad entry at its index', () => {
    expect(validatePermissions({ net: ['a.com', 'b.com', 'c.com', 'd.com', 'e.com'] }, AGENT).errors).toEqual([]);
    expect(validatePermissions({ net: ['ok.example.com', '192.168.0.1', 'https://x.com'] }, AGENT).errors).toEqual([
      {
        code: 'permission.net-blocked',
        path: '/permissions/net/1',
        message: 'Blocked domain: 192.168.0.1. Private/local networks not allowed.',
      },
      {
        code: 'permission.net',
        path: '/permissions/net/2',
        message: 'Network domain must be a bare host name without scheme or path: "https://x.com"',
      },
    ]);
  });
});

describe('validatePermissions: filesystem, env, run, sys, ffi, hrtime', () => {
  it.each([
    ['read', true, 'Filesystem read access not allowed for user-created tools'],
    ['read', ['/etc'], 'Filesystem read access not allowed for user-created tools'],
    ['write', true, 'Filesystem write access not allowed for user-created tools'],
    ['run', ['sh'], 'Subprocess execution not allowed for user-created tools'],
    [
      'env',
      true,
      'Environment access not allowed for user-created tools; declare required_secrets and read context.secrets',
    ],
    ['sys', true, 'System information access not allowed for user-created tools'],
    ['ffi', true, FFI_MESSAGE],
    ['hrtime', true, HRTIME_MESSAGE],
  ])('agent tool: %s = %j is refused', (key, value, message) => {
    expect(validatePermissions({ [key]: value }, AGENT).errors).toEqual([
      { code: 'permission.denied', path: `/permissions/${key}`, message },
    ]);
  });

  it('keeps the RCRT strings for ffi and hrtime', () => {
    expect(FFI_MESSAGE).toBe('FFI (Foreign Function Interface) not allowed');
    expect(HRTIME_MESSAGE).toBe('High-resolution timing not allowed (security risk)');
  });

  it('bootstrapped tool: grants what bootstrapAllow lists, in a fixed order', () => {
    const result = validatePermissions({ env: true, read: true, net: ['api.example.com'] }, BOOTSTRAP);
    expect(result).toEqual({ ...EMPTY, net: ['api.example.com'], extraPermissions: ['read', 'env'] });
  });

  it('bootstrapped tool: refuses what bootstrapAllow does not list, and ffi/hrtime always', () => {
    expect(validatePermissions({ write: true, ffi: true, hrtime: true }, BOOTSTRAP)).toEqual({
      ...EMPTY,
      errors: [
        {
          code: 'permission.denied',
          path: '/permissions/write',
          message:
            'Permission "write" is not allowed for bootstrapped tools unless listed in bootstrapAllow (currently ["read","env","ffi"])',
          fix: '--bootstrap-allow write',
        },
        { code: 'permission.denied', path: '/permissions/ffi', message: FFI_MESSAGE },
        { code: 'permission.denied', path: '/permissions/hrtime', message: HRTIME_MESSAGE },
      ],
    });
  });

  it('bootstrapped tool: refuses scoped lists instead of silently widening them', () => {
    expect(validatePermissions({ read: ['/data'] }, BOOTSTRAP).errors).toEqual([
      {
        code: 'permission.invalid',
        path: '/permissions/read',
        message:
          'permissions.read must be true or false for bootstrapped tools (scoped lists are not supported), got ["/data"]',
      },
    ]);
  });
});

describe('validatePermissions: api', () => {
  it.each([
    [undefined, false],
    [false, false],
    ['read', 'read'],
    ['write', 'write'],
  ])('api %j -> %j', (api, expected) => {
    expect(validatePermissions({ api }, AGENT)).toEqual({ ...EMPTY, api: expected });
  });

  it.each([['admin'], [true], [null], ['READ']])('refuses api %j, naming the value', (api) => {
    expect(validatePermissions({ api }, AGENT).errors).toEqual([
      {
        code: 'permission.api',
        path: '/permissions/api',
        message: `permissions.api must be false, "read" or "write", got ${JSON.stringify(api)}`,
      },
    ]);
  });
});

describe('validatePermissions: the operator policy for upstream files (net: true, breadcrumbs)', () => {
  const NET: PermissionOptions = { origin: 'bootstrap', maxNetDomains: 5, bootstrapAllow: ['net'] };

  it('net: true is any public host for a bootstrapped tool when bootstrapAllow lists net', () => {
    expect(validatePermissions({ net: true }, NET)).toEqual({ ...EMPTY, extraPermissions: ['net'] });
  });

  it('net: true without the flag: refused with the reason and the flag', () => {
    expect(validatePermissions({ net: true }, BOOTSTRAP).errors).toEqual([
      {
        code: 'permission.net',
        path: '/permissions/net',
        message:
          'Unrestricted network access (net: true) is allowed for the operator\'s bootstrapped tools only when bootstrapAllow lists "net" (currently ["read","env","ffi"]); it then means any public host (private, loopback and link-local ranges stay denied), or list the host names the tool needs',
        fix: '--bootstrap-allow net',
      },
    ]);
  });

  it('net: true is never granted to an agent tool, whatever the operator allows', () => {
    expect(validatePermissions({ net: true }, { ...NET, origin: 'agent' }).errors).toEqual([
      {
        code: 'permission.net',
        path: '/permissions/net',
        message: 'Unrestricted network access (net: true) is not allowed; list the host names the tool needs',
      },
    ]);
  });

  it.each([
    [{ read: ['a.v1'], write: ['b.v1'] }, 'write', { read: ['a.v1'], write: ['b.v1'] }],
    [{ read: ['a.v1', 'a.v1'] }, 'read', { read: ['a.v1'], write: [] }],
    [{ read: [], write: [] }, false, undefined],
  ])('breadcrumbs %j -> a scoped %j grant', (breadcrumbs, api, apiSchemas) => {
    expect(validatePermissions({ breadcrumbs }, AGENT)).toEqual({
      ...EMPTY,
      api,
      ...(apiSchemas ? { apiSchemas } : {}),
    });
  });

  it.each([
    [
      { breadcrumbs: ['a.v1'] },
      '/permissions/breadcrumbs',
      'permissions.breadcrumbs must be an object {read?: [schema names], write?: [schema names]}, got ["a.v1"]',
    ],
    [
      { breadcrumbs: { delete: ['a.v1'] } },
      '/permissions/breadcrumbs/delete',
      'permissions.breadcrumbs has an unknown key "delete" (only "read" and "write" lists are known)',
    ],
    [
      { breadcrumbs: { write: ['tool.code.v1'] } },
      '/permissions/breadcrumbs/write/0',
      'Schema "tool.code.v1" is the runner\'s (tool.* records); tools may not be granted it',
    ],
    [
      { breadcrumbs: { read: ['a b'] } },
      '/permissions/breadcrumbs/read/0',
      'A schema name must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$, got "a b"',
    ],
    [
      { breadcrumbs: { read: ['a.v1'] }, api: 'write' },
      '/permissions/breadcrumbs',
      'permissions.breadcrumbs (a grant scoped to schemas) and permissions.api "write" are both given; keep one',
    ],
  ])('refuses %j naming the value', (permissions, path, message) => {
    expect(validatePermissions(permissions, AGENT).errors).toEqual([{ code: 'permission.api', path, message }]);
  });
});
