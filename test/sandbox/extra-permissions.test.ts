// Extra Deno permissions for operator-trusted (bootstrapped) tools: granted only when the operator
// allows them (`bootstrapAllow`), refused otherwise — by validation and again by the sandbox itself.

import { readdirSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
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
    config: defaultConfig({ bootstrapAllow: ['env', 'read', 'write'], poolSize: 0 }),
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

  it('a process without file permissions runs in the one shared empty cwd; one with read or write in an empty dir of its own', async () => {
    const pidTool: SandboxTool = {
      ...tool(['env']),
      name: 'pid',
      source: 'export async function execute() { return { pid: Deno.pid }; }',
    };
    const shared = await allowing.run(job(pidTool));
    const pid = shared.ok ? (shared.output as { pid: number }).pid : -1;
    // (warm mode: the process is parked after its call, so its cwd can be read)
    const sharedCwd = readlinkSync(`/proc/${pid}/cwd`);
    expect(basename(sharedCwd)).toBe('cwd');
    expect(readdirSync(sharedCwd)).toEqual([]);
    const writer: SandboxTool = {
      ...tool(['read', 'write']),
      name: 'writer',
      source:
        'export async function execute() { const files = [...Deno.readDirSync(".")].map((e) => e.name); Deno.writeTextFileSync("left.txt", "x"); return { cwd: Deno.cwd(), files }; }',
    };
    const first = await allowing.run({ ...job(writer), isolation: 'process' });
    const second = await allowing.run({ ...job(writer), isolation: 'process' });
    const a = first.ok ? (first.output as { cwd: string; files: string[] }) : undefined;
    const b = second.ok ? (second.output as { cwd: string; files: string[] }) : undefined;
    expect(a?.files).toEqual([]);
    expect(b?.files).toEqual([]);
    expect(a?.cwd).not.toBe(b?.cwd);
    expect(a?.cwd).not.toBe(sharedCwd);
    expect(readdirSync(sharedCwd)).toEqual([]);
  });
});
