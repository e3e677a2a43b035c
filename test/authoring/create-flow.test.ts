// The create flow as a request kind of the request path: its executor checks definitions with the
// runner's one schema validator (the one it is given — a counting wrapper here, at the
// SchemaValidator interface), and a create request delivered again after its answer is not answered
// twice (the path's claim and answer tag decide, no seen-set of its own). Real store over HTTP, real
// catalog, the real request path (createRequestPath with the create executor).

import { describe, expect, it } from 'vitest';
import { createRequestKeys, createStoreClient, SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import { createCatalog } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { loadConfig } from '../../src/config/index.js';
import { createCreateExecutor } from '../../src/authoring/create-flow.js';
import { createJobQueue } from '../../src/queue/job-queue.js';
import { CREATE_QUEUE } from '../../src/request/events.js';
import { createRequestPath } from '../../src/request/path.js';
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

async function rig() {
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
  onCleanup(() => stop.abort());
  // every request here is rejected before its examples would run: the sandbox is never used
  const sandbox = undefined as unknown as Sandbox;
  const secrets = createSecretResolver({ client: c, workspace: WS, logger: silentLogger() });
  const stamper = createStamper(Buffer.alloc(32, 8));
  const path = createRequestPath({
    client: c,
    keys,
    config,
    logger: silentLogger(),
    replica: 'A',
    catalog,
    validator,
    sandbox,
    secrets,
    hardStop: stop.signal,
    queue: createJobQueue({ concurrency: 2, toolConcurrency: 2, backlog: 100 }),
    create: createCreateExecutor({
      client: c,
      keys,
      sandbox,
      config,
      logger: silentLogger(),
      validator,
      stamper,
      catalog,
      secrets,
    }),
  });
  const createRequest = async (spec: Record<string, unknown>) =>
    (
      await c.createBreadcrumb({
        title: 'create',
        schema_name: SCHEMA.ToolCreateRequest,
        tags: [WS, 'agent:ag'],
        context: { tool_spec: spec },
      })
    ).id;
  const pending = (id: string) => ({ kind: 'create' as const, breadcrumbId: id, rid: id, tool: CREATE_QUEUE });
  const deliver = (id: string) => path.intake.offer(pending(id));
  const answers = (id: string) =>
    c.listBreadcrumbs({ schema_name: SCHEMA.ToolCreateResponse, tag: keys.answerTag(id), include_context: true });
  /** Waits until the request has an answer (the store is polled; the flow answers asynchronously). */
  const answered = async (id: string) => {
    for (let i = 0; i < 400; i++) {
      const found = await answers(id);
      if (found.length > 0) return found;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`create request ${id} was not answered`);
  };
  return { c, checked, createRequest, deliver, answers, answered, path, pending };
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

  it('a create request run again after its answer is not answered twice (the claim finds the answer)', async () => {
    const r = await rig();
    const id = await r.createRequest(badSchema('cf-once'));
    r.deliver(id);
    await r.answered(id);
    // a second job for the same request (a replayed event, a scan on another replica): the claim says answered
    expect(await r.path.job.handle(r.pending(id), new AbortController().signal)).toBe('answered');
    expect(await r.answers(id)).toHaveLength(1);
  });
});
