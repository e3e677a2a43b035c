// The shipped `openrouter` tool against a local server speaking the OpenAI-compatible wire protocol
// (SSE streaming, JSON, /models, real error shapes), through the real sandbox with the server's
// host:port granted by --allow-private-hosts: every example of the shipped file passes with only
// base_url redirected; streamed tokens arrive as progress before the result; HTTP failures map to codes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, sandboxToolOf, type Sandbox } from '../../src/sandbox/index.js';
import type { ToolDefinition } from '../../src/screen/index.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/servers/openai-compatible.js';
import { codeOf, expectNoLeaks, isolateTmp, testConfig } from '../sandbox/helpers.js';
import { runExamplesAgainst, shippedTool } from './helpers.js';

const KEY = 'sk-test-0123456789';
let tmp: ReturnType<typeof isolateTmp>;
let fake: FakeOpenAi;
let sandbox: Sandbox;
let tool: ToolDefinition;

beforeAll(async () => {
  tmp = isolateTmp();
  fake = await startFakeOpenAi({ apiKey: KEY });
  const config = testConfig({ allowPrivateHosts: { openrouter: [`127.0.0.1:${fake.port}`] } });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  tool = await shippedTool('openrouter.json', config);
});

afterAll(async () => {
  await sandbox?.close();
  await fake?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const call = (input: Record<string, unknown>, options: { key?: string; progress?: unknown[] } = {}) =>
  sandbox.run({
    tool: sandboxToolOf(tool),
    input: { base_url: fake.baseUrl, ...input },
    secrets: { LLM_API_KEY: options.key ?? KEY },
    request: { id: 'req-llm', workspace: 'workspace:tools' },
    ...(options.progress ? { onProgress: (value: unknown) => void options.progress?.push(value) } : {}),
  });

describe('openrouter (shipped tool) against a local OpenAI-compatible server', () => {
  it('passes every example of the shipped file with base_url redirected', async () => {
    const reports = await runExamplesAgainst(tool, sandbox, { base_url: fake.baseUrl }, { LLM_API_KEY: KEY });
    expect(reports.map((r) => [r.description, r.ok, r.error ?? ''])).toEqual(
      tool.examples.map((e) => [e.description, true, '']),
    );
  });

  it('streams: every token is reported as progress before the result, which holds the whole reply', async () => {
    const progress: unknown[] = [];
    const result = await call(
      { messages: [{ role: 'user', content: 'one two three' }], model: 'openai/gpt-4o-mini' },
      { progress },
    );
    expect(result.ok ? result.output : result.error).toEqual({
      content: 'Echo: one two three',
      model: 'openai/gpt-4o-mini',
      finish_reason: 'stop',
      usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 },
    });
    expect(progress).toEqual([{ text: 'Echo: ' }, { text: 'one ' }, { text: 'two ' }, { text: 'three' }]);
    const sent = fake.requests.at(-1);
    expect(sent?.authorization).toBe(`Bearer ${KEY}`);
    expect(sent?.body).toMatchObject({
      model: 'openai/gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: 'one two three' }],
    });
  });

  it('stream: false asks for one JSON answer and reports no progress', async () => {
    const progress: unknown[] = [];
    const result = await call(
      {
        messages: [{ role: 'user', content: 'hi' }],
        stream: false,
        temperature: 0.2,
        max_tokens: 5,
        venice_parameters: { include_venice_system_prompt: false },
      },
      { progress },
    );
    expect(result.ok && result.output).toMatchObject({ content: 'Echo: hi', finish_reason: 'stop' });
    expect(progress).toEqual([]);
    expect(fake.requests.at(-1)?.body).toEqual({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
      temperature: 0.2,
      max_tokens: 5,
      venice_parameters: { include_venice_system_prompt: false },
    });
  });

  it('lists models (action models)', async () => {
    const result = await call({ action: 'models' });
    expect(result.ok && result.output).toMatchObject({
      models_count: 2,
      models: [{ id: 'openai/gpt-4o-mini', context_length: 128000 }, { id: 'meta-llama/llama-3.1-8b-instruct' }],
    });
  });

  it.each([
    [
      'a wrong key (401)',
      { model: 'openai/gpt-4o-mini' },
      'sk-wrong',
      'permission.denied',
      'answered 401: Incorrect API key provided / invalid_request_error / invalid_api_key (check the LLM_API_KEY secret',
    ],
    [
      'a rate limit (429)',
      { model: 'rate-limited' },
      KEY,
      'rate.exceeded',
      'answered 429: Rate limit exceeded: free-models-per-min / rate_limit_error / 429 (retry after 7 s)',
    ],
    [
      'a server error (500)',
      { model: 'server-error' },
      KEY,
      'dependency.unavailable',
      'answered 500: Internal Server Error / server_error / internal_error',
    ],
  ])('maps %s to its code, keeping the provider message', async (_what, input, key, code, message) => {
    const result = await call({ messages: [{ role: 'user', content: 'x' }], ...input }, { key });
    expect(codeOf(result)).toBe(code);
    expect(result.ok ? '' : result.error.message).toContain(message);
    expect(result.ok ? '' : result.error.message).not.toContain('sk-wrong');
  });

  it('a base_url on a private port the operator did not grant is refused by the sandbox', async () => {
    const result = await call({
      messages: [{ role: 'user', content: 'x' }],
      base_url: `http://127.0.0.1:${fake.port + 1}/v1`,
    });
    expect(codeOf(result)).toBe('permission.denied');
  });
});
