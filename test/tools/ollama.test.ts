// The shipped `ollama` tool against a local server speaking Ollama's wire protocol (NDJSON streaming
// chat and generate, /api/tags, {error} bodies), through the real sandbox with the server's host:port
// granted by --allow-private-hosts: the shipped examples pass with only base_url redirected, tokens
// arrive as progress, a model that is not pulled is not_found, and without the grant the tool is refused.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, sandboxToolOf, type Sandbox } from '../../src/sandbox/index.js';
import type { ToolDefinition } from '../../src/screen/index.js';
import { startFakeOllama, type FakeOllama } from '../fixtures/servers/ollama.js';
import { codeOf, expectNoLeaks, isolateTmp, testConfig } from '../sandbox/helpers.js';
import { runExamplesAgainst, shippedTool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let fake: FakeOllama;
let sandbox: Sandbox;
let tool: ToolDefinition;

beforeAll(async () => {
  tmp = isolateTmp();
  fake = await startFakeOllama();
  const config = testConfig({ allowPrivateHosts: { ollama: [`127.0.0.1:${fake.port}`] } });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  tool = await shippedTool('ollama.json', config);
});

afterAll(async () => {
  await sandbox?.close();
  await fake?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const call = (input: Record<string, unknown>, progress?: unknown[], t: ToolDefinition = tool) =>
  sandbox.run({
    tool: sandboxToolOf(t),
    input: { base_url: fake.baseUrl, ...input },
    secrets: {},
    request: { id: 'req-ollama', workspace: 'workspace:tools' },
    ...(progress ? { onProgress: (value: unknown) => void progress.push(value) } : {}),
  });

describe('ollama (shipped tool) against a local Ollama-compatible server', () => {
  it('passes every example of the shipped file with base_url redirected', async () => {
    const reports = await runExamplesAgainst(tool, sandbox, { base_url: fake.baseUrl });
    expect(reports.map((r) => [r.description, r.ok, r.error ?? ''])).toEqual(
      tool.examples.map((e) => [e.description, true, '']),
    );
  });

  it('streams chat as NDJSON: tokens as progress, counts from the done line', async () => {
    const progress: unknown[] = [];
    const result = await call(
      {
        model: 'llama3.2:1b',
        system: 'be brief',
        messages: [{ role: 'user', content: 'red green' }],
        temperature: 0.1,
        max_tokens: 9,
      },
      progress,
    );
    expect(result.ok ? result.output : result.error).toEqual({
      content: 'Echo: red green',
      model: 'llama3.2:1b',
      finish_reason: 'stop',
      usage: { prompt_tokens: 26, completion_tokens: 3, total_tokens: 29 },
      cost_estimate: 0,
      total_duration_ms: 5192,
    });
    expect(progress).toEqual([{ text: 'Echo: ' }, { text: 'red ' }, { text: 'green' }]);
    expect(fake.requests.at(-1)?.body).toEqual({
      model: 'llama3.2:1b',
      stream: true,
      options: { temperature: 0.1, num_predict: 9 },
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'red green' },
      ],
    });
  });

  it('generates from a prompt (action inferred), streamed', async () => {
    const progress: unknown[] = [];
    const result = await call({ model: 'qwen2.5:0.5b', prompt: 'sky blue' }, progress);
    expect(result.ok && result.output).toMatchObject({ content: 'Echo: sky blue', finish_reason: 'stop' });
    expect(progress).toHaveLength(3);
    expect(fake.requests.at(-1)?.path).toBe('/api/generate');
  });

  it('lists the local models', async () => {
    const result = await call({ action: 'models' });
    expect(result.ok && result.output).toMatchObject({
      models_count: 2,
      models: [{ name: 'llama3.2:1b', family: 'llama', parameter_size: '1.2B' }, { name: 'qwen2.5:0.5b' }],
    });
  });

  it('accepts upstream ollama_local input (ollama_host, top_p, default model llama3.1:8b)', async () => {
    const result = await sandbox.run({
      tool: sandboxToolOf(tool),
      input: { ollama_host: fake.baseUrl, top_p: 0.5, messages: [{ role: 'user', content: 'hi' }] },
      secrets: {},
      request: { id: 'r', workspace: 'workspace:tools' },
    });
    expect(codeOf(result)).toBe('not_found'); // the fake has no llama3.1:8b: the default reached it
    expect(fake.requests.at(-1)?.body).toMatchObject({ model: 'llama3.1:8b', options: { top_p: 0.5 } });
  });

  it("a model that is not pulled is not_found with Ollama's message", async () => {
    const result = await call({ model: 'nope:7b', messages: [{ role: 'user', content: 'x' }] });
    expect(codeOf(result)).toBe('not_found');
    expect(result.ok ? '' : result.error.message).toContain(
      'answered 404: model "nope:7b" not found, try pulling it first',
    );
  });

  it('the default base_url (localhost:11434) is refused when the operator granted another host:port', async () => {
    const result = await sandbox.run({
      tool: sandboxToolOf(tool),
      input: { action: 'models' },
      secrets: {},
      request: { id: 'r', workspace: 'workspace:tools' },
    });
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toContain("--allow-private-hosts 'ollama=localhost:11434'");
  });
});
