// The create flow: it checks definitions with the runner's one schema validator (the one in its
// ExtensionContext — a counting wrapper here, at the SchemaValidator interface), and the set of
// create requests it remembers is bounded (oldest evicted; an evicted request delivered again is
// looked up in the store and not answered twice). Real store over HTTP, real catalog.

import { describe, expect, it } from 'vitest';
import { createRequestKeys, createStoreClient, SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import { createCatalog } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { loadConfig } from '../../src/config/index.js';
import { createToolCreationExtension } from '../../src/authoring/create-flow.js';
import { createRecentIds } from '../../src/authoring/recent-ids.js';
import { silentLogger } from '../../src/logger.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { createSchemaValidator, validateToolDefinition, type SchemaValidator } from '../../src/screen/index.js';
import { createSecretResolver } from '../../src/tool-context/secrets.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 7));

/** The real validator, counting the schemas it is asked about. */
function countingValidator(): { validator: SchemaValidator; checked: unknown[] } {
  const real = createSchemaValidator();
  const checked: unknown[] = [];
  return {
    checked,
    validator: {
      ...real,
      check: (schema) => {
        checked.push(schema);
        return real.check(schema);
      },
      validate: (schema, value) => {
        checked.push(schema);
        return real.validate(schema, value);
      },
    },
  };
}

async function rig(maxSeen?: number) {
  const store = await startStore();
  const c: StoreClient = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  const { config } = loadConfig({ env: {}, argv: ['--workspace', WS] });
  const { validator, checked } = countingValidator();
  const catalogValidator = createSchemaValidator();
  const catalog = createCatalog({
    client: c,
    workspace: WS,
    logger: silentLogger(),
    stamper: createStamper(Buffer.alloc(32, 8)),
    // the catalog's own validator, so that only the create flow feeds the counting one
    validate: (context, origin) => validateToolDefinition(context, { origin, config, validator: catalogValidator }),
    operatorTools: () => new Map(),
    hostTools: () => [],
  });
  await catalog.load();
  const stop = new AbortController();
  const extension = createToolCreationExtension(maxSeen === undefined ? {} : { maxSeen });
  await extension.start({
    client: c,
    keys,
    catalog,
    // every request here is rejected before its examples would run: the sandbox is never used
    sandbox: undefined as unknown as Sandbox,
    config,
    logger: silentLogger(),
    replica: 'A',
    signal: stop.signal,
    stamper: createStamper(Buffer.alloc(32, 8)),
    pinOperatorTool: () => undefined,
    secrets: createSecretResolver({ client: c, workspace: WS, logger: silentLogger() }),
    validator,
  });
  onCleanup(async () => {
    stop.abort();
    await extension.stop?.();
  });
  const createRequest = async (spec: Record<string, unknown>) =>
    (await c.createBreadcrumb({ title: 'create', schema_name: SCHEMA.ToolCreateRequest, tags: [WS, 'agent:ag'], context: { tool_spec: spec } })).id;
  const deliver = (id: string) => extension.handleEvent?.({ type: 'breadcrumb.updated', breadcrumb_id: id, schema_name: SCHEMA.ToolCreateRequest, tags: [WS] });
  const answers = (id: string) => c.listBreadcrumbs({ schema_name: SCHEMA.ToolCreateResponse, tag: keys.answerTag(id), include_context: true });
  /** Waits until the request has an answer (the store is polled; the flow answers asynchronously). */
  const answered = async (id: string) => {
    for (let i = 0; i < 400; i++) {
      const found = await answers(id);
      if (found.length > 0) return found;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`create request ${id} was not answered`);
  };
  return { c, checked, createRequest, deliver, answers, answered, extension };
}

const badSchema = (name: string) => ({
  name,
  description: 'a tool whose input schema does not compile',
  input_schema: { type: 'object', properties: { n: { type: 'nonsense' } } },
  output_schema: { type: 'object' },
  code: { source: 'export async function execute() { return {}; }' },
  examples: [{ description: 'e', input: { n: 1 } }],
});

describe('create flow', () => {
  it("checks a definition with the runner's validator from its context (no validator of its own)", async () => {
    const r = await rig();
    const spec = badSchema('cf-bad');
    const id = await r.createRequest(spec);
    r.deliver(id);
    const [answer] = await r.answered(id);
    expect(answer?.context).toMatchObject({
      status: 'rejected',
      errors: [
        {
          code: 'schema.invalid',
          path: '/tool_spec/input_schema',
          message:
            'input_schema is not a valid JSON Schema: schema is invalid: data/properties/n/type must be equal to one of the allowed values, data/properties/n/type must be array, data/properties/n/type must match a schema in anyOf',
        },
      ],
    });
    expect(r.checked).toContainEqual(spec.input_schema);
  });

  it('remembers a bounded number of requests; an evicted request delivered again is not answered twice', async () => {
    const r = await rig(2);
    const ids: string[] = [];
    for (const name of ['cf-one', 'cf-two', 'cf-three']) {
      const id = await r.createRequest(badSchema(name));
      ids.push(id);
      r.deliver(id);
      await r.answered(id);
    }
    // cf-one was evicted by cf-three: delivering it again queues a store lookup, which finds the answer
    r.deliver(ids[0] as string);
    r.deliver(ids[2] as string);
    await r.extension.stop?.();
    for (const id of ids) expect(await r.answers(id)).toHaveLength(1);
  });
});

describe('createRecentIds', () => {
  it('keeps at most max ids, evicting the oldest; adding a known id refreshes it', () => {
    const seen = createRecentIds(2);
    seen.add('a');
    seen.add('b');
    seen.add('a'); // a is now the newest
    seen.add('c'); // evicts b
    expect([seen.has('a'), seen.has('b'), seen.has('c'), seen.size]).toEqual([true, false, true, 2]);
    seen.delete('a');
    seen.add('d');
    expect([seen.has('c'), seen.has('d'), seen.size]).toEqual([true, true, 2]);
    for (let i = 0; i < 10_000; i++) seen.add(`x${i}`);
    expect(seen.size).toBe(2);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses the bound %s', (max) => {
    expect(() => createRecentIds(max)).toThrow(`the bound of a recent-id set must be an integer >= 1, got ${String(max)}`);
  });
});
