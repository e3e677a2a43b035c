// Host tools' text is cleaned exactly as code tools' text is (src/sandbox/sanitise.ts): terminal
// escapes, C0/C1 controls and bidi overrides are removed from logs and error messages, secrets are
// redacted, and logs are capped at --max-log-bytes.

import { afterEach, describe, expect, it } from 'vitest';
import {
  executeHostTool,
  loadManifest,
  type ExecuteHostToolOptions,
  type HostTool,
} from '../../src/host-tools/index.js';
import {
  captureLogger,
  createTempDirs,
  livingChildren,
  schemas,
  testConfig,
  validator,
  writeManifest,
  type OptionOverrides,
} from '../host-tools/helpers.js';

const temp = createTempDirs();
afterEach(async () => {
  await temp.cleanup();
  expect(livingChildren()).toEqual([]);
});

/** A host tool running `script` under /bin/sh (stdin: the JSON arguments). */
async function shellTool(script: string): Promise<HostTool> {
  const result = await loadManifest(
    await writeManifest(await temp.make(), {
      tools: [{ name: 't', description: 'shell', command: ['/bin/sh', '-c', `cat > /dev/null; ${script}`] }],
    }),
    { validator },
  );
  if (!result.ok) throw new Error(result.error);
  return result.tools[0] as HostTool;
}

async function options(over: OptionOverrides = {}): Promise<ExecuteHostToolOptions> {
  return {
    logger: captureLogger().logger,
    schemas,
    resolveSecret: async () => undefined,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/home/tester' },
    ...over,
    config: testConfig(over.config),
  };
}

describe('host tool text', () => {
  it('logs lose bidi overrides, C1 controls and terminal escapes', async () => {
    // U+202E (right-to-left override), U+0085 (C1 next line), an OSC title escape, a colour escape.
    const t = await shellTool(
      `printf 'a\\342\\200\\256b\\302\\205c \\033]0;title\\007\\033[31mred\\033[0m\\n' >&2; echo '{}'`,
    );
    const result = await executeHostTool(t, {}, await options());
    expect(result).toMatchObject({ ok: true, output: {}, logs: ['abc red'], logsTruncated: false });
  });

  it('error messages lose bidi overrides and C1 controls', async () => {
    const t = await shellTool(`printf 'bad\\342\\200\\256 thing\\302\\205' >&2; exit 3`);
    const result = await executeHostTool(t, {}, await options());
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.error', message: 'bad thing' } });
  });

  it('logs are capped at maxLogBytes, the crossing line cut, and marked truncated', async () => {
    const line = 'x'.repeat(20);
    const t = await shellTool(`for i in 1 2 3 4 5; do echo ${line} >&2; done; echo '{}'`);
    const result = await executeHostTool(t, {}, await options({ config: { maxLogBytes: 50 } }));
    expect(result).toMatchObject({ ok: true, logs: [line, line, 'x'.repeat(10)], logsTruncated: true });
  });

  it('without maxLogBytes every line within the default cap is kept', async () => {
    const t = await shellTool(`for i in 1 2 3; do echo line-$i >&2; done; echo '{}'`);
    expect(await executeHostTool(t, {}, await options())).toMatchObject({
      ok: true,
      logs: ['line-1', 'line-2', 'line-3'],
      logsTruncated: false,
    });
  });
});
