// The audit log writer (src/audit/audit-log.ts) and the redactor (src/audit/redact.ts): the file
// follows each record's UTC date, every line is redacted, and a directory that cannot be written is
// logged, never fatal.

import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { auditFileName, writeAuditRecord, type CallAuditRecord } from '../../src/audit/audit-log.js';
import { createRedactor, REDACTED } from '../../src/audit/redact.js';
import { captureLogger } from '../host-tools/helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(path.join(tmpdir(), 'audit-test-'));
  dirs.push(dir);
  return dir;
};

const record = (ts: string, extra: Record<string, unknown> = {}): CallAuditRecord & Record<string, unknown> => ({
  ts, tool: 't', version: '1', kind: 'host', agent: null, agent_verified: false, agent_label: null, rid: 'r', request_id: 'b',
  input_hash: 'sha256:00', side_effect: 'unknown', approval_id: null, effects: [], effects_count: 0, status: 'success',
  outcome: 'ok', ms: 1, total_ms: 2, attempts: 1, replica: 'x', ...extra,
});

describe('audit log', () => {
  it('the file follows the UTC date of each record', async () => {
    const dir = await tempDir();
    const { logger } = captureLogger();
    await writeAuditRecord(dir, record('2025-01-02T23:59:59.000Z'), createRedactor([]), logger);
    await writeAuditRecord(dir, record('2025-01-03T00:00:01.000Z'), createRedactor([]), logger);
    expect((await readdir(dir)).sort()).toEqual(['20250102.log', '20250103.log']);
    expect(auditFileName(new Date('2025-01-02T23:59:59Z'))).toBe('20250102.log');
    const line = await readFile(path.join(dir, '20250103.log'), 'utf8');
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toMatchObject({ ts: '2025-01-03T00:00:01.000Z', tool: 't' });
  });

  it('every string of the line is redacted: literals first, then the operator patterns', async () => {
    const dir = await tempDir();
    const redactor = createRedactor(['sk-live-123456'], ['secret', 'sk-[a-z]+']);
    await writeAuditRecord(dir, record('2025-01-02T00:00:00.000Z', { argv: ['--token=sk-live-123456', '--note=my-secret', 'sk-abc'] }), redactor, captureLogger().logger);
    const [file] = await readdir(dir);
    const text = await readFile(path.join(dir, file as string), 'utf8');
    expect(JSON.parse(text).argv).toEqual([`--token=${REDACTED}`, `--note=my-${REDACTED}`, REDACTED]);
    expect(text).not.toContain('live-123456');
  });

  it('a directory that cannot be written is logged, never fatal', async () => {
    const blocker = path.join(await tempDir(), 'audit');
    await writeFile(blocker, 'not a directory');
    const log = captureLogger();
    await writeAuditRecord(blocker, record('2025-01-02T00:00:00.000Z'), createRedactor([]), log.logger);
    expect(log.lines.find((line) => line.msg === 'audit write failed')).toMatchObject({ level: 'warn', tool: 't' });
  });
});
