// Extra Deno permissions for operator-trusted (bootstrapped) tools: granted only when the operator
// allows them (`bootstrapAllow`), refused otherwise — by validation and again by the sandbox itself.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { buildDenoCommand } from '../../src/sandbox/command.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';

const source = 'export async function execute() { return { path: Deno.env.get("PATH") ?? null }; }';
const tool = (extraPermissions?: string[]): SandboxTool => ({
  name: 'env-reader',
  version: '1.0.0',
  source,
  net: [],
  api: false,
  timeoutMs: 10_000,
  memoryMb: 64,
  ...(extraPermissions ? { extraPermissions } : {}),
});
const job = (t: SandboxTool) => ({
  tool: t,
  input: {},
  secrets: {},
  request: { id: 'r', workspace: 'workspace:tools' },
});

let allowing: Sandbox;
let strict: Sandbox;
beforeAll(async () => {
  allowing = await createSandbox({
    config: defaultConfig({ bootstrapAllow: ['env'], poolSize: 0 }),
    logger: silentLogger(),
  });
  strict = await createSandbox({ config: defaultConfig({ poolSize: 0 }), logger: silentLogger() });
});
afterAll(async () => {
  await allowing.close();
  await strict.close();
});

describe('extra permissions', () => {
  it('become --allow-<name> flags', () => {
    expect(
      buildDenoCommand({ denoPath: '/bin/deno', net: [], extra: ['env', 'sys'], memoryMb: 64, cwd: '/tmp/x' }).args,
    ).toEqual(expect.arrayContaining(['--allow-env', '--allow-sys']));
  });

  it('an allowed grant works (and sees only the minimal environment)', async () => {
    const result = await allowing.run(job(tool(['env'])));
    expect(result.ok && result.output).toEqual({ path: '/usr/local/bin:/usr/bin:/bin' });
  });

  it('without the grant the API is refused at run time', async () => {
    const result = await allowing.run(job(tool()));
    expect(result.ok ? 'ok' : result.error.code).toBe('permission.denied');
  });

  it('a grant the operator does not allow is refused before anything runs', async () => {
    const result = await strict.run(job(tool(['env'])));
    expect(result.ok ? 'ok' : result.error).toMatchObject({
      code: 'permission.denied',
      message: 'tool "env-reader" asks for permission(s) the operator does not allow: env',
    });
    const unknown = await allowing.run(job(tool(['ffi'])));
    expect(unknown.ok ? 'ok' : unknown.error.message).toMatch(/does not allow: ffi/);
  });
});
