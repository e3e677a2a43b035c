import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  defaultConfig,
  defaultDataDir,
  envName,
  flagName,
  loadConfig,
  spliceConfigTable,
} from '../../src/config/index.js';

describe('config', () => {
  it('derives flag and env names from the key', () => {
    expect(flagName('dataDir')).toBe('data-dir');
    expect(envName('dataDir')).toBe('TOOLS_RUNNER_DATA_DIR');
  });

  it('applies defaults, then env, then flags', () => {
    expect(defaultConfig().port).toBe(8081);
    const { config, positionals } = loadConfig({
      env: { TOOLS_RUNNER_PORT: '9000', TOOLS_RUNNER_DATA_DIR: '/tmp/x' },
      argv: ['--port', '0', 'file.json', '--no-bootstrap', '--reuse-tools=a,b'],
    });
    expect(config.port).toBe(0);
    expect(config.dataDir).toBe('/tmp/x');
    expect(config.bootstrap).toBe(false);
    expect(config.reuseTools).toEqual(['a', 'b']);
    expect(positionals).toEqual(['file.json']);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    [{ XDG_DATA_HOME: '/xdg', HOME: '/home/u' }, '/xdg/tools-runner'],
    [{ HOME: '/home/u' }, '/home/u/.local/share/tools-runner'],
    [{ XDG_DATA_HOME: 'relative/dir', HOME: '/home/u' }, '/home/u/.local/share/tools-runner'],
    [{ XDG_DATA_HOME: '', HOME: '/home/u' }, '/home/u/.local/share/tools-runner'],
    [{}, join(homedir(), '.local/share/tools-runner')],
  ])('the default data dir never depends on the working directory: %j -> %s', (env, dir) => {
    expect(defaultDataDir(env)).toBe(dir);
    const { config } = loadConfig({ env });
    expect(config.dataDir).toBe(dir);
    expect(config.auditDir).toBe(join(dir, 'audit'));
  });

  it('the audit dir follows --data-dir unless given; :memory: keeps it under the default data dir', () => {
    const env = { XDG_DATA_HOME: '/xdg' };
    expect(loadConfig({ env, argv: ['--data-dir', '/srv/tr'] }).config.auditDir).toBe('/srv/tr/audit');
    expect(loadConfig({ env: { ...env, TOOLS_RUNNER_DATA_DIR: '/srv/env' } }).config.auditDir).toBe('/srv/env/audit');
    expect(loadConfig({ env, argv: ['--data-dir', '/srv/tr', '--audit-dir', '/var/log/tr'] }).config.auditDir).toBe(
      '/var/log/tr',
    );
    expect(loadConfig({ env, argv: ['--data-dir', ':memory:'] }).config.auditDir).toBe('/xdg/tools-runner/audit');
  });

  it('the default bootstrap dir is the one shipped with the installation', () => {
    const dir = defaultConfig().bootstrapDir;
    expect(isAbsolute(dir)).toBe(true);
    expect(dir).toBe(fileURLToPath(new URL('../../bootstrap-breadcrumbs', import.meta.url)));
    expect(existsSync(join(dir, 'tools-self-contained'))).toBe(true);
  });

  it('accepts booleans as bare flags and with values', () => {
    expect(loadConfig({ env: {}, argv: ['--bootstrap'] }).config.bootstrap).toBe(true);
    expect(loadConfig({ env: {}, argv: ['--bootstrap', 'false'] }).config.bootstrap).toBe(false);
    expect(loadConfig({ env: { TOOLS_RUNNER_TOOL_CREATION: 'no' } }).config.toolCreation).toBe(false);
  });

  it.each([
    [{ argv: ['--port', 'abc'] }, /--port="abc"/],
    [{ argv: ['--port', '70000'] }, /--port="70000"/],
    [{ env: { TOOLS_RUNNER_WORKSPACE: 'tools' } }, /TOOLS_RUNNER_WORKSPACE="tools"/],
    [{ argv: ['--nope', '1'] }, /unknown option "--nope"/],
    [{ argv: ['--port'] }, /option "--port" needs a value/],
    [
      { argv: ['--runner-secret', `hex:${'0'.repeat(63)}`] },
      /--runner-secret=<hidden>: a secret starting with "hex:" must be followed by exactly 64 hex digits/,
    ],
  ])('rejects bad input with a message naming it: %j', (input, message) => {
    expect(() => loadConfig({ env: {}, ...input })).toThrow(message);
  });

  it('never echoes secret values in errors', () => {
    expect(() => loadConfig({ env: {}, argv: ['--auth-secret', ''] })).toThrow(/<hidden>/);
  });

  it('docs/configuration.md table is generated from the current schema (run `npm run docs:config`)', () => {
    const readme = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(spliceConfigTable(readme)).toBe(readme);
  });
});
