// Operator-granted private hosts (--allow-private-hosts): exactly the granted host:port of the granted
// tool gets through the private-range deny list, with real Deno processes and real local servers.
// Every other port and address stays denied, another tool naming the same host is refused, and the
// screen refuses the same entry in an agent's tool definition.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { denyNetFor, DENY_NET } from '../../src/sandbox/net-policy.js';
import { sandboxToolOf } from '../../src/sandbox/tool-spec.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, localServers, testConfig, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let sandbox: Sandbox;
const servers = localServers();
let granted = 0;
let other = 0;

const listen = (host: string): Promise<number> => servers.listen(host, (_req, res) => res.end(`hello from ${host}`));

beforeAll(async () => {
  tmp = isolateTmp();
  granted = await listen('127.0.0.1');
  other = await listen('127.0.0.1');
  const config = testConfig({ allowPrivateHosts: { 'local-llm': [`127.0.0.1:${granted}`] } });
  sandbox = await createSandbox({ config, logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  await servers.closeAll();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const localTool = (name: string) => tool('fetch-url', { name, privateNet: [`127.0.0.1:${granted}`] });

describe('--allow-private-hosts in the sandbox (real Deno)', () => {
  it('the granted tool reaches the granted host:port', async () => {
    const result = await sandbox.run(job(localTool('local-llm'), { url: `http://127.0.0.1:${granted}/` }));
    expect(result.ok ? result.output : result.error).toEqual({ status: 200, body: 'hello from 127.0.0.1' });
  });

  it('the same tool on another local port is denied', async () => {
    const result = await sandbox.run(job(localTool('local-llm'), { url: `http://127.0.0.1:${other}/` }));
    expect(codeOf(result)).toBe('permission.denied');
  });

  it('the same tool on another loopback address with the granted port is denied', async () => {
    const result = await sandbox.run(job(localTool('local-llm'), { url: `http://127.0.0.2:${granted}/` }));
    expect(codeOf(result)).toBe('permission.denied');
  });

  it('another tool naming the granted host is refused before any process runs', async () => {
    const result = await sandbox.run(job(localTool('someone-else'), { url: `http://127.0.0.1:${granted}/` }));
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toContain(
      `did not grant it (--allow-private-hosts): 127.0.0.1:${granted}`,
    );
  });

  it('a tool without the grant cannot reach it', async () => {
    const result = await sandbox.run(
      job(tool('fetch-url', { name: 'plain' }), { url: `http://127.0.0.1:${granted}/` }),
    );
    expect(codeOf(result)).toBe('permission.denied');
  });
});

describe('denyNetFor', () => {
  it('is DENY_NET without grants', () => {
    expect(denyNetFor(['api.example.com:443'], [])).toEqual([...DENY_NET]);
  });

  it('cuts exactly the granted addresses out and denies the other allowed ports on them', () => {
    const deny = denyNetFor(['openrouter.ai:443'], [{ entry: 'localhost:11434', addresses: ['127.0.0.1', '::1'] }]);
    expect(deny).not.toContain('127.0.0.0/8');
    expect(deny).not.toContain('[::1]');
    expect(deny).toContain('127.0.0.0/32');
    expect(deny).toContain('127.0.0.2/31');
    expect(deny).toContain('127.128.0.0/9');
    expect(deny).toContain('10.0.0.0/8');
    expect(deny).toContain('[::]');
    // a public name resolving to a granted address (DNS rebinding) reaches nothing
    expect(deny).toContain('127.0.0.1:443');
    expect(deny).toContain('[::1]:443');
    expect(deny).not.toContain('127.0.0.1:11434');
    // the carved /8 still covers 2^24 - 1 addresses
    const covered = deny
      .filter((d) => d.startsWith('127.') && d.includes('/'))
      .reduce((sum, cidr) => sum + 2 ** (32 - Number(cidr.split('/')[1])), 0);
    expect(covered).toBe(2 ** 24 - 1);
  });
});

describe('screening of a private host in permissions.net', () => {
  const validator = createSchemaValidator();
  const config = testConfig({ allowPrivateHosts: { ollama: ['localhost:11434'] } });
  const definition = (name: string) => ({
    name,
    description: 'local model',
    version: '1.0.0',
    code: { source: 'export async function execute() { return {}; }' },
    input_schema: { type: 'object' },
    output_schema: { type: 'object' },
    permissions: { net: ['localhost:11434'] },
    examples: [{ description: 'x', input: {} }],
  });

  it('accepts the granted entry for the bootstrapped tool it is granted to', () => {
    const result = validateToolDefinition(definition('ollama'), { origin: 'bootstrap', config, validator });
    expect(result.errors).toEqual([]);
    expect(result.tool?.net).toEqual([]);
    expect(result.tool?.privateNet).toEqual(['localhost:11434']);
    expect(sandboxToolOf(result.tool!).privateNet).toEqual(['localhost:11434']);
  });

  it('refuses it in an agent tool of the same name', () => {
    const result = validateToolDefinition(definition('ollama'), { origin: 'agent', config, validator });
    expect(result.ok).toBe(false);
    expect(result.errors[0]).toMatchObject({ path: '/permissions/net/0', code: 'permission.net-blocked' });
  });

  it('refuses it in another bootstrapped tool, naming the flag', () => {
    const result = validateToolDefinition(definition('other'), { origin: 'bootstrap', config, validator });
    expect(result.ok).toBe(false);
    expect(result.errors[0]?.message).toContain('--allow-private-hosts');
  });
});
