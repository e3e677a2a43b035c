// Host tools on the request path: the input is normalised the way agentcli reads it (R8: null or a
// blank string is `{}`, a JSON string is parsed) BEFORE the manifest schema is checked, and checked
// once, with the same message shape code tools get.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { answer, cleanupAll, client, request, startRunnerWithStore, tempDir } from '../e2e/harness.js';

const bin = fileURLToPath(new URL('../fixtures/host-tools/bin/', import.meta.url));
let c: StoreClient;

beforeAll(async () => {
  const dir = tempDir();
  const manifest = join(dir, 'tools.json');
  const schema = { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: false };
  writeFileSync(
    manifest,
    JSON.stringify({
      tools: [{ name: 'host.echo', description: 'echoes its arguments', schema, command: [join(bin, 'echo-json')] }],
    }),
  );
  const { url } = await startRunnerWithStore([
    '--manifests',
    manifest,
    '--granted-capabilities',
    'exec',
    '--audit-dir',
    join(dir, 'audit'),
  ]);
  c = client(url);
});

afterAll(cleanupAll);

describe('host tool input (R8 before the schema)', () => {
  it.each([
    ['null', null, {}],
    ['a blank string', '  ', {}],
    ['a JSON string', '{"a":2}', { a: 2 }],
    ['an object', { a: 3 }, { a: 3 }],
  ])('%s is normalised, then checked, then run', async (_label, input, output) => {
    const response = await answer(c, await request(c, 'host.echo', input));
    expect(response.error).toBeUndefined();
    expect(response.status).toBe('success');
    expect(response.output).toEqual(output);
  });

  it('a JSON string that breaks the schema is input.invalid, named by path', async () => {
    const response = await answer(c, await request(c, 'host.echo', '{"a":"x"}'));
    expect(response.error).toMatchObject({
      code: 'input.invalid',
      message: 'input does not match the input schema of "host.echo": /a: must be number',
    });
  });

  it.each([
    ['an array', [1], 'input must be a JSON object (got array)'],
    ['a number', 7, 'input must be a JSON object (got number)'],
    ['a string that is not JSON', 'not json', 'input must be a JSON object (got a string that is not JSON)'],
  ])('%s is input.invalid before any schema check', async (_label, input, message) => {
    const response = await answer(c, await request(c, 'host.echo', input));
    expect(response.error).toMatchObject({ code: 'input.invalid', message });
  });
});
