// Effects, the timeout taxonomy and the audit line, end to end through a real runner process with
// its embedded store and real Deno: the runner counts what a call did (context.api writes, network
// uses the harness reports before they happen, host transports started) and answers a hung or failed
// side-effecting call with timeout.unknown-commit / timeout.before-submit / partial-effect; every
// call of a non-read-only tool, code or host, leaves one audit line of one format, without secrets.

import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { CALL_AUDIT_FIELDS } from '../../src/request/policies/audit.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, tempDir, toolContext } from './harness.js';

const bin = fileURLToPath(new URL('../fixtures/host-tools/bin/', import.meta.url));
/** A store secret of the code tool (a valid host label, so the tool can put it in a host name). */
const CODE_SECRET = 'vaultsecret7f3a9c';
/** A secrets-file secret of the host tool. */
const HOST_SECRET = 'smtp-secret-91b2e4d7';
const HANG = 'await new Promise(() => setInterval(() => {}, 1000));';
const limits = { timeout_ms: 1500, memory_mb: 64 };
const apiWrite = { permissions: { net: false, api: 'write' }, limits };
const create =
  'const made = await context.api.createBreadcrumb({ title: "effect", tags: ["e2e:effects"], context: { n: 1 } });';

let c: StoreClient;
let auditDir: string;

beforeAll(async () => {
  const dir = tempDir();
  auditDir = join(dir, 'audit');
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify({ MAIL_SMTP_API_KEY: HOST_SECRET }));
  chmodSync(secretsFile, 0o600);
  const manifest = join(dir, 'runloop-tools.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      version: 1,
      tools: [
        {
          id: 'mail.report',
          description: 'reports its input and its secret (echoes the secret into its output)',
          transport: { kind: 'exec', command: join(bin, 'runloop-tool') },
          input_schema: { type: 'object' },
          result_schema: null,
          capabilities: [],
          secrets: ['MAIL_SMTP_API_KEY'],
        },
      ],
    }),
  );
  const { url } = await startRunnerWithStore([
    '--manifests',
    manifest,
    '--granted-capabilities',
    'exec',
    '--audit-dir',
    auditDir,
    '--secrets-file',
    secretsFile,
    '--share-secrets',
    'FX_KEY=fx-secretive',
  ]);
  c = client(url);
  await Promise.all([
    putTool(
      c,
      toolContext(
        'fx-write-hang',
        `export async function execute(input, context) { ${create} ${HANG} return {}; }`,
        apiWrite,
      ),
    ),
    putTool(
      c,
      toolContext(
        'fx-write-throw',
        `export async function execute(input, context) { ${create} throw new Error("gave up after writing " + made.id); }`,
        apiWrite,
      ),
    ),
    putTool(
      c,
      toolContext('fx-hang', `export async function execute() { ${HANG} return {}; }`, {
        ...apiWrite,
        contract: { side_effect: 'irreversible' },
      }),
    ),
    putTool(
      c,
      toolContext('fx-ro-hang', `export async function execute(input, context) { ${create} ${HANG} return {}; }`, {
        ...apiWrite,
        contract: { side_effect: 'read-only' },
      }),
    ),
    putTool(
      c,
      toolContext('fx-ro-fetch', 'export async function execute() { return {}; }', {
        contract: { side_effect: 'read-only' },
      }),
    ),
    // reaches for a host it was granted (reported before the connection is tried) and hangs
    putTool(
      c,
      toolContext(
        'fx-fetch-hang',
        `export async function execute() { fetch("https://api.example.com/charge").catch(() => {}); ${HANG} return {}; }`,
        { permissions: { net: ['api.example.com'] }, limits },
      ),
    ),
    // busy loops: no permission at all, and a network grant it never uses
    putTool(c, toolContext('fx-pure-hang', 'export async function execute() { for (;;) {} }', { limits })),
    putTool(
      c,
      toolContext('fx-net-hang', 'export async function execute() { for (;;) {} }', {
        permissions: { net: ['api.example.com'] },
        limits,
      }),
    ),
    // a host it was NOT granted: Deno refuses, nothing reached out
    putTool(
      c,
      toolContext(
        'fx-denied-hang',
        `export async function execute() { await fetch("https://other.example.org/").catch(() => {}); ${HANG} return {}; }`,
        { permissions: { net: ['api.example.com'] }, limits },
      ),
    ),
    putTool(
      c,
      toolContext(
        'fx-secretive',
        `export async function execute(input, context) {
          const s = context.secrets.FX_KEY;
          await context.api.createBreadcrumb({ title: "secret " + s, tags: ["e2e:effects"], context: { s } });
          await fetch("https://" + s + ".example.com/").catch(() => {});
          return { echoed: s, got: input };
        }`,
        {
          permissions: { net: ['*.example.com'], api: 'write' },
          limits: { timeout_ms: 10_000, memory_mb: 64 },
          required_secrets: ['FX_KEY'],
        },
      ),
    ),
  ]);
  await c.createSecret({ name: 'FX_KEY', scope_type: 'global', value: CODE_SECRET });
});

afterAll(cleanupAll);

/** Every audit line written so far. */
function auditLines(): Array<Record<string, unknown>> {
  if (!existsSync(auditDir)) return [];
  return readdirSync(auditDir)
    .flatMap((file) => readFileSync(join(auditDir, file), 'utf8').split('\n'))
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The audit line of `rid` once it is written (the audit policy writes it just after the answer). */
async function auditOf(rid: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const found = auditLines().filter((line) => line['rid'] === rid);
    if (found.length > 0) {
      expect(found).toHaveLength(1);
      return found[0] as Record<string, unknown>;
    }
    if (Date.now() > deadline) throw new Error(`no audit line for ${rid}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const COMMON_KEYS: readonly string[] = CALL_AUDIT_FIELDS;

describe('the timeout taxonomy', () => {
  it('a tool that wrote through context.api and then hangs answers timeout.unknown-commit, naming the record', async () => {
    const response = await answer(c, await request(c, 'fx-write-hang', {}));
    expect(response.error?.code).toBe('timeout.unknown-commit');
    expect(response.error?.retryable).toBe(false);
    const effects = response.error?.details?.['effects'] as Array<{ kind: string; target: string }>;
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ kind: 'store.create' });
    expect(response.error?.message).toBe(
      `tool "fx-write-hang" timed out after 1500 ms and was killed; it had 1 effect (store.create ${effects[0]?.target}), so its action may have committed: check before retrying`,
    );
    expect(response.error?.details).toMatchObject({ effects_count: 1, cause_code: 'timeout' });
    // the effect is real: the record exists
    expect((await c.getBreadcrumbFull(effects[0]?.target as string)).title).toBe('effect');
  });

  it('a side-effecting tool that hangs before any effect answers timeout.before-submit (retryable)', async () => {
    const response = await answer(c, await request(c, 'fx-hang', {}));
    expect(response.error).toMatchObject({
      code: 'timeout.before-submit',
      retryable: true,
      message:
        'tool "fx-hang" timed out after 1500 ms and was killed; it had no effect yet, so nothing was submitted and it is safe to retry',
    });
    expect(response.error?.details).toMatchObject({ cause_code: 'timeout' });
    expect(response.error?.details?.['effects']).toBeUndefined();
  });

  it('a read-only tool that hangs keeps timeout', async () => {
    const response = await answer(c, await request(c, 'fx-ro-hang', {}));
    expect(response.error?.code).toBe('timeout');
    expect(response.error?.message).toBe('tool "fx-ro-hang" timed out after 1500 ms and was killed');
  });

  it('a tool that wrote and then threw answers partial-effect with the original code and the effect', async () => {
    const response = await answer(c, await request(c, 'fx-write-throw', {}));
    expect(response.error?.code).toBe('partial-effect');
    const effects = response.error?.details?.['effects'] as Array<{ kind: string; target: string }>;
    expect(effects.map((e) => e.kind)).toEqual(['store.create']);
    expect(response.error?.details).toMatchObject({ cause_code: 'tool.error', effects_count: 1 });
    expect(response.error?.message).toBe(`gave up after writing ${effects[0]?.target}`);
  });

  it('a network use the harness reported before connecting makes a hang timeout.unknown-commit', async () => {
    const response = await answer(c, await request(c, 'fx-fetch-hang', {}));
    expect(response.error?.code).toBe('timeout.unknown-commit');
    expect(response.error?.details?.['effects']).toEqual([
      { kind: 'net.fetch', target: 'api.example.com:443', at_ms: expect.any(Number) },
    ]);
  });

  it('a tool with no permission (no net, no api write) that loops forever answers plain timeout, not retryable', async () => {
    const response = await answer(c, await request(c, 'fx-pure-hang', {}));
    expect(response.error).toMatchObject({
      code: 'timeout',
      retryable: false,
      message: 'tool "fx-pure-hang" timed out after 1500 ms and was killed',
    });
    expect(response.error?.details?.['cause_code']).toBeUndefined();
  });

  it('the same loop in a tool that may use the network keeps the taxonomy: timeout.before-submit, retryable', async () => {
    const response = await answer(c, await request(c, 'fx-net-hang', {}));
    expect(response.error).toMatchObject({ code: 'timeout.before-submit', retryable: true });
    expect(response.error?.details).toMatchObject({ cause_code: 'timeout' });
  });

  it('a refused host is no effect: the hang stays timeout.before-submit', async () => {
    const response = await answer(c, await request(c, 'fx-denied-hang', {}));
    expect(response.error?.code).toBe('timeout.before-submit');
  });
});

describe('audit evidence', () => {
  it('one line per call of a code tool and of a host tool, in one format, with no secret value anywhere', async () => {
    const codeRid = await request(c, 'fx-secretive', { note: CODE_SECRET }, undefined, { requestedBy: 'agent-7' });
    const code = await answer(c, codeRid);
    expect(code.status).toBe('success');
    const codeEffects = code.metadata['effects'] as Array<{ kind: string; target: string }>;
    expect(codeEffects.map((e) => e.kind)).toEqual(['store.create', 'net.fetch']);
    expect(codeEffects[1]?.target).toBe('[REDACTED].example.com:443');
    const hostRid = await request(c, 'mail.report', { note: HOST_SECRET }, undefined, { requestedBy: 'agent-7' });
    const host = await answer(c, hostRid);
    expect(host.status).toBe('success');
    expect(host.metadata['effects']).toEqual([
      { kind: 'host.exec', target: join(bin, 'runloop-tool'), at_ms: expect.any(Number) },
    ]);

    const codeLine = await auditOf(codeRid);
    const hostLine = await auditOf(hostRid);
    expect(Object.keys(codeLine)).toEqual(COMMON_KEYS);
    expect(Object.keys(hostLine).slice(0, COMMON_KEYS.length)).toEqual(COMMON_KEYS);
    expect(codeLine).toMatchObject({
      tool: 'fx-secretive',
      version: '1.0.0',
      kind: 'code',
      agent: 'agent-7',
      rid: codeRid,
      side_effect: 'unknown',
      approval_id: null,
      effects_count: 2,
      status: 'success',
      outcome: 'ok',
      attempts: 1,
    });
    expect(codeLine['input_hash']).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(codeLine['effects']).toEqual(codeEffects);
    expect(hostLine).toMatchObject({
      tool: 'mail.report',
      kind: 'host',
      agent: 'agent-7',
      rid: hostRid,
      effects_count: 1,
      status: 'success',
      outcome: 'ok',
      attempts: 1,
      transport: 'exec',
      exit: 0,
    });
    const text = readdirSync(auditDir)
      .map((file) => readFileSync(join(auditDir, file), 'utf8'))
      .join('');
    expect(text).not.toContain(CODE_SECRET);
    expect(text).not.toContain(HOST_SECRET);
  });

  it('a failed side-effecting call is audited with its code; a read-only call is not audited', async () => {
    const roRid = await request(c, 'fx-ro-fetch', {});
    expect((await answer(c, roRid)).status).toBe('success');
    const rid = await request(c, 'fx-write-throw', {});
    await answer(c, rid);
    expect(await auditOf(rid)).toMatchObject({ status: 'error', outcome: 'partial-effect', effects_count: 1 });
    expect(auditLines().filter((line) => line['rid'] === roRid)).toEqual([]);
  });
});
