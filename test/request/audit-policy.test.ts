// The audit policy's settle hook: one line of the common format per call of a tool that is not
// read-only (unknown included), none for a read-only tool; host transport facts follow the common
// fields and never replace one; the operator's --redact patterns apply to the whole line.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Route } from '../../src/catalog/catalog.js';
import type { ToolContract } from '../../src/contract/contract.js';
import { silentLogger } from '../../src/logger.js';
import type { Call, Settled } from '../../src/request/policy.js';
import { auditPolicy, CALL_AUDIT_FIELDS } from '../../src/request/policies/audit.js';
import { failure, type ExecutionResult } from '../../src/result.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tr-audit-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const NOW = new Date('2026-11-23T12:00:00.000Z');

function call(contract: ToolContract, kind: 'code' | 'host' = 'code', metadata: Record<string, unknown> = {}): Call {
  // the policy reads the route's kind and tool name only
  const route = { kind, tool: { name: 'crm-update' } } as unknown as Route;
  return {
    identity: { breadcrumbId: 'bc-1', rid: 'req-1', tool: 'crm-update', agentId: 'agent-7' },
    route,
    version: '1.2.0',
    contract,
    input: { a: 1 },
    inputHash: 'sha256:abc',
    metadata,
    warnings: [],
  };
}

const settled = (result: ExecutionResult, attempts = 1): Settled => ({
  result,
  ran: attempts > 0,
  attempts,
  durationMs: 20.4,
});
const ok = (extra: Partial<ExecutionResult> = {}): ExecutionResult =>
  ({ ok: true, output: {}, durationMs: 12.6, logs: [], logsTruncated: false, ...extra }) as ExecutionResult;

function lines(): Array<Record<string, unknown>> {
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  expect(files.every((f) => f === '20261123.log')).toBe(true);
  return files.flatMap((f) =>
    readFileSync(join(dir, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

describe('the audit policy', () => {
  const policy = (redact: string[] = []) =>
    auditPolicy({ auditDir: dir, redact, replica: 'r-1', logger: silentLogger(), now: () => NOW });

  it('writes one line of the common format for a call of an unknown tool', async () => {
    const effects = [{ kind: 'store.update' as const, target: 'rec-1', at_ms: 3 }];
    await policy().settle?.(call({}, 'code', { approval_id: 'ap-9' }), settled(ok({ effects })));
    expect(lines()).toEqual([
      {
        ts: '2026-11-23T12:00:00.000Z',
        tool: 'crm-update',
        version: '1.2.0',
        kind: 'code',
        agent: 'agent-7',
        agent_verified: false,
        agent_label: null,
        rid: 'req-1',
        request_id: 'bc-1',
        input_hash: 'sha256:abc',
        side_effect: 'unknown',
        approval_id: 'ap-9',
        effects,
        effects_count: 1,
        status: 'success',
        outcome: 'ok',
        ms: 13,
        total_ms: 20,
        attempts: 1,
        replica: 'r-1',
      },
    ]);
    expect(Object.keys(lines()[0] as object)).toEqual([...CALL_AUDIT_FIELDS]);
  });

  it('writes nothing for a read-only tool', async () => {
    await policy().settle?.(call({ side_effect: 'read-only' }), settled(ok()));
    expect(lines()).toEqual([]);
  });

  it("a host tool's transport facts follow the common fields and cannot replace one", async () => {
    const result: ExecutionResult = {
      ok: false,
      error: failure('tool.error', 'boom'),
      durationMs: 5,
      logs: [],
      logsTruncated: false,
      evidence: { argv: ['/bin/x'], exit: 1, transport: 'exec', outcome: 'forged', rid: 'forged' },
    };
    await policy().settle?.(call({ side_effect: 'irreversible' }, 'host'), settled(result));
    const [line] = lines();
    expect(line).toMatchObject({
      kind: 'host',
      side_effect: 'irreversible',
      status: 'error',
      outcome: 'tool.error',
      rid: 'req-1',
      argv: ['/bin/x'],
      exit: 1,
      transport: 'exec',
    });
    expect(Object.keys(line as object)).toEqual([...CALL_AUDIT_FIELDS, 'argv', 'exit', 'transport']);
  });

  it('a call answered without a run is audited with attempts 0 and ms 0', async () => {
    const refused: ExecutionResult = {
      ok: false,
      error: failure('rate.exceeded', 'slow down'),
      durationMs: 0.2,
      logs: [],
      logsTruncated: false,
    };
    await policy().settle?.(call({}), settled(refused, 0));
    expect(lines()[0]).toMatchObject({ outcome: 'rate.exceeded', attempts: 0, ms: 0 });
  });

  it("applies the operator's --redact patterns to the whole line", async () => {
    await policy(['acct-[0-9]+']).settle?.(
      call({}),
      settled(
        ok({ effects: [{ kind: 'store.update', target: 'acct-4411' }], evidence: { argv: ['/bin/x', 'acct-99'] } }),
      ),
    );
    const text = readFileSync(join(dir, '20261123.log'), 'utf8');
    expect(text).not.toMatch(/acct-[0-9]/);
    expect(lines()[0]).toMatchObject({
      effects: [{ kind: 'store.update', target: '***REDACTED***' }],
      argv: ['/bin/x', '***REDACTED***'],
    });
  });
});
