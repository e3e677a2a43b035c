// Extra Deno permissions for operator-trusted (bootstrapped) tools: granted only when the operator
// allows them (`bootstrapAllow`), refused otherwise — by validation and again by the sandbox itself.

import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { buildDenoCommand } from '../../src/sandbox/command.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { waitFor } from './helpers.js';

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

/** /proc/<pid>/stat after the command name: [state, ppid, pgrp, session, ...]. */
const statOf = (pid: number): string[] =>
  readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
const alive = (pid: number): boolean => {
  try {
    return statOf(pid)[0] !== 'Z';
  } catch {
    return false;
  }
};

// Sessions: one per process that may start programs (so that they die with it), none for the others.
// On kernels with autogroup scheduling every session is weighed as one against all others; the
// sandbox processes of one launcher share its session (command.ts ownGroup).
describe.each([
  ['warm (the spawner)', 'warm'],
  ['process (the Deno relay)', 'process'],
] as const)('process groups, %s', (_name, isolation) => {
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'extra-run-'));
    sandbox = await createSandbox({
      config: defaultConfig({ bootstrapAllow: ['run', 'read', 'write'], poolSize: 0, isolation }),
      logger: silentLogger(),
    });
  });
  afterAll(async () => {
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a process that may not start programs stays in its launcher's session; one granted `run` leads its own", async () => {
    // the tool reports its pid, then waits until the test has looked (a file appears), so that even a
    // single-use process is alive while its session is read
    const source = `export async function execute(input) {
      Deno.writeTextFileSync(input.pidFile, String(Deno.pid));
      while (true) { try { Deno.statSync(input.goFile); break; } catch { await new Promise((r) => setTimeout(r, 10)); } }
      return { pid: Deno.pid };
    }`;
    for (const [extra, leads] of [
      [['read', 'write'], false],
      [['run', 'read', 'write'], true],
    ] as const) {
      const pidFile = join(dir, `pid-${extra.length}`);
      const goFile = join(dir, `go-${extra.length}`);
      const t: SandboxTool = { ...tool([...extra]), name: `session-${extra.length}`, source };
      const call = sandbox.run({ ...job(t), input: { pidFile, goFile } });
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 30_000, 'the pid file');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      const [, ppid, pgrp, session] = statOf(pid);
      if (leads) expect([Number(pgrp), Number(session)]).toEqual([pid, pid]);
      else {
        expect(Number(session)).not.toBe(pid);
        expect(Number(session)).not.toBe(Number(statOf(process.pid)[3])); // not the service's (a terminal's) session
        expect(Number(pgrp)).toBe(Number(statOf(Number(ppid))[2])); // its launcher's group
      }
      writeFileSync(goFile, '');
      const result = await call;
      expect(result.ok && result.output).toEqual({ pid });
    }
  });

  it('what a process granted `run` started dies with it when the call is killed (timeout)', async () => {
    const pidFile = join(dir, 'helper-pid');
    const t: SandboxTool = {
      ...tool(['run', 'write']),
      name: 'starts-helper',
      timeoutMs: 1500,
      source: `export async function execute(input) {
        const helper = new Deno.Command('/bin/sleep', { args: ['1000'], stdin: 'null', stdout: 'null', stderr: 'null' }).spawn();
        Deno.writeTextFileSync(input.pidFile, String(helper.pid));
        await new Promise(() => setInterval(() => {}, 1000));
      }`,
    };
    const result = await sandbox.run({ ...job(t), input: { pidFile } });
    expect(result.ok ? 'ok' : result.error.code).toBe('timeout');
    const helper = Number(readFileSync(pidFile, 'utf8'));
    await waitFor(() => !alive(helper), 10_000, 'the helper to die with the process group');
  });
});
