// Screening and full validation of a realistic ~50 KB TypeScript tool, plus cached schema validation.
//
// Prints one JSON object: source_bytes, screen_ms_p50 (screenSource alone), validate_ms_p50 (the
// rest of validateToolDefinition: permissions, limits, schemas, examples), total_ms_p50/p99
// (validateToolDefinition end to end, screening included), schema_validate_us (one
// createSchemaValidator().validate call on a cached schema as the runner makes it: the deep-frozen
// ToolDefinition.inputSchema) and schema_validate_unfrozen_us (the same schema as a plain, mutable
// object: keyed by canonical JSON on every call). Target: total < 20 ms for 50 KB.
// The three timings are interleaved per iteration so that load from other processes hits them alike.
import { performance } from 'node:perf_hooks';
import {
  createSchemaValidator,
  screenSource,
  validatePermissions,
  validateSchemas,
  validateToolDefinition,
} from '../dist/screen/index.js';
import { defaultConfig } from '../dist/config/index.js';

const TARGET_BYTES = 50 * 1024;
const WARMUP = 10;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 100);
const SCHEMA_CALLS = 100_000;

/** One block of ordinary tool code: types, an enum, strings, a generic function and a class. */
function block(i) {
  return `
interface Record${i} { id: string; value${i}: number; tags?: string[]; nested: { ok: boolean; list: Array<Map<string, number>> } }
type Union${i} = 'a${i}' | 'b${i}' | Record${i};
enum Kind${i} { First = ${i}, Second = 'second-${i}' }
const MESSAGES_${i} = {
  greeting: "Hello ${i}: this string mentions eval( and require( and new Function( on purpose",
  template: \`value \${${i} * 2} of \${'block'}\`,
  config: { retries: ${i % 5}, backoffMs: [100, 200, 400], headers: { 'content-type': 'application/json' } },
} as const;
export function filter${i}<T extends Record${i}>(items: readonly T[], limit = ${i}): T[] {
  const out: T[] = [];
  for (const item of items) {
    if (item.value${i} > limit && (item.tags?.length ?? 0) >= 0) out.push(item);
  }
  return out.sort((x, y) => x.value${i} - y.value${i});
}
class Store${i}<K, V extends object> {
  private readonly entries = new Map<K, V>();
  constructor(private readonly name: string, public limit: number = ${i}) {}
  get(key: K): V | undefined { return this.entries.get(key); }
  set(key: K, value: V): this { if (this.entries.size < this.limit) this.entries.set(key, value); return this; }
  async load(url: string): Promise<number> {
    const res = await fetch(url, { headers: MESSAGES_${i}.config.headers });
    const json = (await res.json()) as { n: number };
    return json.n + Kind${i}.First + this.name.length;
  }
}
`;
}

function buildSource() {
  let source = '// Generated benchmark tool\n';
  for (let i = 0; Buffer.byteLength(source) < TARGET_BYTES - 600; i++) source += block(i);
  source += `
export async function execute(input: { query: string; limit?: number }): Promise<{ items: string[]; total: number }> {
  const store = new Store0<string, { q: string }>('bench');
  store.set(input.query, { q: input.query });
  const items = filter0([], input.limit ?? 10).map((r) => r.id);
  return { items, total: items.length };
}
`;
  return source;
}

const source = buildSource();
const properties = Object.fromEntries(
  Array.from({ length: 12 }, (_, i) => [
    `field${i}`,
    { type: i % 2 ? 'string' : 'integer', description: `Field ${i}` },
  ]),
);
const inputSchema = {
  type: 'object',
  properties: {
    query: { type: 'string', description: 'Query', minLength: 1, maxLength: 200 },
    limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Max' },
    ...properties,
  },
  required: ['query'],
  additionalProperties: false,
};
const outputSchema = {
  type: 'object',
  properties: {
    items: { type: 'array', items: { type: 'string' }, description: 'Items' },
    total: { type: 'integer', description: 'Total' },
  },
  required: ['items', 'total'],
};
const context = {
  name: 'bench-tool',
  description: 'A large generated tool for the screening benchmark',
  version: '1.0.0',
  code: { language: 'typescript', source },
  input_schema: inputSchema,
  output_schema: outputSchema,
  permissions: { net: ['api.example.com', '*.cdn.example.org'], api: 'read' },
  limits: { timeout_ms: 10_000, memory_mb: 128 },
  required_secrets: ['API_KEY'],
  examples: [
    { description: 'one', input: { query: 'a', limit: 5, field0: 1, field1: 'x' }, output: { items: [], total: 0 } },
    { description: 'two', input: { query: 'b' }, output: { items: ['x'], total: 1 }, match: 'exact' },
  ],
};
const config = defaultConfig();
const validator = createSchemaValidator();
const grants = { net: ['api.example.com', '*.cdn.example.org'], extraPermissions: [] };

const check = validateToolDefinition(context, { origin: 'agent', config, validator });
if (!check.ok) {
  console.error(JSON.stringify(check.errors, null, 2));
  throw new Error('the generated benchmark tool must pass validation');
}

/** Runs the functions in turn, WARMUP + ITERATIONS times; returns each one's sorted samples (ms). */
function timeInterleaved(fns) {
  const samples = fns.map(() => []);
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    fns.forEach((fn, k) => {
      const start = performance.now();
      fn();
      if (i >= WARMUP) samples[k].push(performance.now() - start);
    });
  }
  return samples.map((list) => list.sort((a, b) => a - b));
}

function microseconds(schema, data) {
  for (let i = 0; i < 10_000; i++) validator.validate(schema, data);
  const start = performance.now();
  for (let i = 0; i < SCHEMA_CALLS; i++) validator.validate(schema, data);
  return ((performance.now() - start) * 1000) / SCHEMA_CALLS;
}
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const round = (n, digits = 3) => Number(n.toFixed(digits));

console.error(`# screening ${Buffer.byteLength(source)} bytes, ${ITERATIONS} iterations`);
const [screen, rest, total] = timeInterleaved([
  () => screenSource(source, { permissions: grants, maxSourceBytes: config.maxSourceBytes }),
  () => {
    validatePermissions(context.permissions, {
      origin: 'agent',
      maxNetDomains: config.maxNetDomains,
      bootstrapAllow: config.bootstrapAllow,
    });
    validateSchemas(context, { validator });
  },
  () => validateToolDefinition(context, { origin: 'agent', config, validator }),
]);

console.error(`# schema validate x${SCHEMA_CALLS} on a cached schema`);
const data = { query: 'hello', limit: 10, field0: 1, field1: 'a', field2: 2 };
const schemaUs = microseconds(check.tool.inputSchema, data);
const unfrozenUs = microseconds(inputSchema, data);

console.log(
  JSON.stringify({
    source_bytes: Buffer.byteLength(source),
    iterations: ITERATIONS,
    screen_ms_p50: round(pct(screen, 50)),
    validate_ms_p50: round(pct(rest, 50)),
    total_ms_p50: round(pct(total, 50)),
    total_ms_p99: round(pct(total, 99)),
    schema_validate_us: round(schemaUs, 2),
    schema_validate_unfrozen_us: round(unfrozenUs, 2),
  }),
);
