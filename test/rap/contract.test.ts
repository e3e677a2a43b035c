// RAP tools get their contract from their annotations (contracts.md §5.2), fetched from a real
// spec-faithful tool server: readOnly / destructive / idempotent -> side_effect / idempotent; none,
// or a contradiction, is unknown.

import { describe, expect, it } from 'vitest';
import { createRapRuntime } from '../../src/rap/index.js';
import { createSchemaValidator } from '../../src/screen/index.js';
import { captureLogger, onCleanup } from './helpers.js';
import { startSpecServer } from './spec-server.js';

const tool = (name: string, annotations?: Record<string, unknown>) => ({
  name,
  description: `tool ${name}`,
  inputSchema: { type: 'object' },
  ...(annotations ? { annotations } : {}),
});

describe('RAP tool contracts', () => {
  it('maps each tool’s annotations into its contract', async () => {
    const server = await startSpecServer((endpoint) => ({
      name: 'mapped',
      endpoint,
      tools: [
        tool('reader', { readOnly: true, idempotent: true }),
        tool('deleter', { destructive: true, idempotent: false }),
        tool('writer', { destructive: false, idempotent: true }),
        tool('both', { readOnly: true, destructive: true }),
        tool('plain'),
        tool('slow', { longRunning: true }),
      ],
    }));
    onCleanup(() => server.close());
    const runtime = createRapRuntime({
      servers: [server.url],
      validator: createSchemaValidator(),
      logger: captureLogger().logger,
      resultTimeoutMs: 5000,
      localHostTools: () => [],
      codeToolNames: () => [],
    });
    await runtime.refresh();
    const byName = Object.fromEntries(
      runtime.tools().map((t) => [t.name, { contract: t.contract, requiresConfirmation: t.requiresConfirmation }]),
    );
    expect(byName).toEqual({
      reader: { contract: { side_effect: 'read-only', idempotent: true }, requiresConfirmation: false },
      deleter: { contract: { side_effect: 'irreversible', idempotent: false }, requiresConfirmation: true },
      writer: { contract: { idempotent: true }, requiresConfirmation: false },
      both: { contract: {}, requiresConfirmation: true },
      plain: { contract: {}, requiresConfirmation: false },
      slow: { contract: {}, requiresConfirmation: false },
    });
  });
});
