// Every shipped tool declares its contract (issue 20 point 4), so MCP clients stop asking for
// confirmation before read-only tools: calculator, echo, random, slugify, json-transform, timer and
// breadcrumb-search are read-only and idempotent; breadcrumb-create writes; http-request talks to
// other hosts (it can POST/PUT/DELETE), so it stays served as destructive, as do the LLM tools (each
// call sends the conversation to a provider and may cost money); context-builder and browser-capture
// only read. The workflow declares no side effect: its
// effect is its steps', each checked under its own contract on its nested request, and an unknown side
// effect is served as destructive. http-request's hosts name no package registry.

import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadToolFiles } from '../../src/authoring/tool-files.js';
import { defaultConfig } from '../../src/config/index.js';
import { sideEffectPolicy } from '../../src/contract/contract.js';
import { createSchemaValidator, validateToolDefinition, type ToolDefinition } from '../../src/screen/index.js';

const DIR = fileURLToPath(new URL('../../bootstrap-breadcrumbs/', import.meta.url));
const EXPECTED: Record<string, { side: string | undefined; readOnly: boolean; destructive: boolean }> = {
  calculator: { side: 'read-only', readOnly: true, destructive: false },
  echo: { side: 'read-only', readOnly: true, destructive: false },
  random: { side: 'read-only', readOnly: true, destructive: false },
  slugify: { side: 'read-only', readOnly: true, destructive: false },
  'json-transform': { side: 'read-only', readOnly: true, destructive: false },
  timer: { side: 'read-only', readOnly: true, destructive: false },
  'breadcrumb-search': { side: 'read-only', readOnly: true, destructive: false },
  'breadcrumb-create': { side: 'reversible-write', readOnly: false, destructive: false },
  'http-request': { side: 'external-communication', readOnly: false, destructive: true },
  'context-builder': { side: 'read-only', readOnly: true, destructive: false },
  'browser-capture': { side: 'read-only', readOnly: true, destructive: false },
  openrouter: { side: 'external-communication', readOnly: false, destructive: true },
  ollama: { side: 'external-communication', readOnly: false, destructive: true },
  workflow: { side: undefined, readOnly: false, destructive: true },
};

describe('shipped tools', () => {
  it('each declares its side effect, and MCP annotations follow from it', async () => {
    const validator = createSchemaValidator();
    const tools: ToolDefinition[] = [];
    for (const file of await loadToolFiles(DIR, 'workspace:tools')) {
      if (!file.ok) throw new Error(file.error);
      const check = validateToolDefinition(file.breadcrumb.context, {
        origin: 'bootstrap',
        config: defaultConfig(),
        validator,
      });
      if (!check.ok) throw new Error(JSON.stringify(check.errors));
      tools.push(check.tool);
    }
    expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const tool of tools) {
      const want = EXPECTED[tool.name]!;
      expect([tool.name, tool.contract.side_effect]).toEqual([tool.name, want.side]);
      const { mcp } = sideEffectPolicy(tool.contract.side_effect, {
        ...(tool.contract.idempotent !== undefined ? { idempotent: tool.contract.idempotent } : {}),
      });
      expect([tool.name, mcp.readOnlyHint, mcp.destructiveHint]).toEqual([tool.name, want.readOnly, want.destructive]);
    }
    const http = tools.find((t) => t.name === 'http-request')!;
    expect(http.net).toEqual(['api.github.com', 'jsonplaceholder.typicode.com', 'httpbin.org']);
    expect(JSON.stringify(http)).not.toMatch(/npmjs|registry\.|pypi|crates\.io/);
  });
});
