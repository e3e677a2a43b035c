import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import {
  createSchemaValidator,
  definitionOf,
  validateToolDefinition,
  type DefinitionOptions,
  type ToolDefinition,
} from '../../src/screen/index.js';

const config = defaultConfig();
const validator = createSchemaValidator();
const AGENT: DefinitionOptions = { origin: 'agent', config, validator };

const SOURCE = `interface Input { city: string; units?: 'metric' | 'imperial' }
interface Output { city: string; temperature: number }

export async function execute(input: Input, context: { secrets: Record<string, string> }): Promise<Output> {
  const url = \`https://api.weather.example.com/v1/now?q=\${encodeURIComponent(input.city)}\`;
  const res = await fetch(url, { headers: { authorization: \`Bearer \${context.secrets.WEATHER_KEY}\` } });
  const body = (await res.json()) as { temp: number };
  return { city: input.city, temperature: body.temp };
}
`;

/** A complete tool.code.v1 context as upstream bootstrap files write it, with upstream's extra fields. */
const weather = () => ({
  name: 'weather-now',
  description: 'Current temperature for a city',
  version: '1.2.0-beta.1',
  code: { language: 'typescript', source: SOURCE },
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name' },
      units: { type: 'string', enum: ['metric', 'imperial'], description: 'Units' },
    },
    required: ['city'],
  },
  output_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City' },
      temperature: { type: 'number', description: 'Degrees' },
    },
    required: ['city', 'temperature'],
  },
  permissions: {
    net: ['API.Weather.Example.com', 'api.weather.example.com'],
    read: false,
    write: false,
    env: false,
    run: false,
    ffi: false,
    hrtime: false,
    api: 'read',
  },
  limits: { timeout_ms: 5000, memory_mb: 64, cpu_percent: 50 },
  required_secrets: ['WEATHER_KEY'],
  examples: [
    {
      description: 'Paris',
      input: { city: 'Paris' },
      output: { city: 'Paris', temperature: 21.5 },
      explanation: 'typical call',
    },
    {
      description: 'Exact',
      input: { city: 'Oslo', units: 'metric' },
      output: { city: 'Oslo', temperature: 3 },
      match: 'exact',
    },
  ],
  bootstrap: { always: true },
  subscriptions: { selectors: [] },
  ui_schema: {},
});

describe('validateToolDefinition', () => {
  it('normalises a full valid tool to the exact ToolDefinition', () => {
    const result = validateToolDefinition(weather(), AGENT);
    const expected: ToolDefinition = {
      name: 'weather-now',
      description: 'Current temperature for a city',
      version: '1.2.0-beta.1',
      language: 'typescript',
      source: SOURCE,
      inputSchema: weather().input_schema,
      outputSchema: weather().output_schema,
      net: ['api.weather.example.com'],
      api: 'read',
      extraPermissions: [],
      timeoutMs: 5000,
      memoryMb: 64,
      cpuPercent: 50,
      requiredSecrets: ['WEATHER_KEY'],
      examples: [
        {
          description: 'Paris',
          input: { city: 'Paris' },
          output: { city: 'Paris', temperature: 21.5 },
          match: 'schema',
        },
        {
          description: 'Exact',
          input: { city: 'Oslo', units: 'metric' },
          output: { city: 'Oslo', temperature: 3 },
          match: 'exact',
        },
      ],
      contract: {},
    };
    expect(result).toEqual({
      ok: true,
      errors: [],
      warnings: [
        {
          code: 'permission.net-duplicate',
          path: '/permissions/net/1',
          message: 'Duplicate network domain "api.weather.example.com" ignored',
        },
      ],
      tool: expected,
    });
  });

  it('returns a deep-frozen copy that does not share objects with the input', () => {
    const context = weather();
    const result = validateToolDefinition(context, AGENT);
    if (!result.ok) throw new Error('expected ok');
    expect(Object.isFrozen(result.tool)).toBe(true);
    expect(Object.isFrozen(result.tool.inputSchema)).toBe(true);
    expect(Object.isFrozen(result.tool.examples[0]?.input)).toBe(true);
    expect(result.tool.inputSchema).not.toBe(context.input_schema);
    context.input_schema.required.push('later');
    expect(result.tool.inputSchema).toEqual(weather().input_schema);
  });

  it('applies defaults: language, version (with a warning), limits, secrets, permissions', () => {
    const { version: _v, limits: _l, required_secrets: _r, permissions: _p, ...spec } = weather();
    const result = validateToolDefinition(
      {
        ...spec,
        code: {
          source: SOURCE.replace('fetch(url,', 'Promise.resolve(url,').replace('await res.json()', '{ temp: 1 }'),
        },
      },
      AGENT,
    );
    expect(result.warnings).toEqual([
      { code: 'definition.version', path: '/version', message: 'No version given; using "1.0.0"' },
    ]);
    expect(result.tool).toMatchObject({
      version: '1.0.0',
      language: 'typescript',
      timeoutMs: config.defaultTimeoutMs,
      memoryMb: config.defaultMemoryMb,
      requiredSecrets: [],
      net: [],
      api: false,
    });
  });

  it.each([
    [
      'name',
      'Weather Now',
      '/name',
      'definition.name',
      'Tool name must match ^[a-z][a-z0-9_-]{0,63}$, got "Weather Now"',
    ],
    ['name', undefined, '/name', 'definition.name', 'Tool name must match ^[a-z][a-z0-9_-]{0,63}$, got undefined'],
    [
      'name',
      'a'.repeat(65),
      '/name',
      'definition.name',
      `Tool name must match ^[a-z][a-z0-9_-]{0,63}$, got "${'a'.repeat(65)}"`,
    ],
    [
      'description',
      '  ',
      '/description',
      'definition.description',
      'Tool description must be a non-empty string, got "  "',
    ],
    [
      'version',
      '1.0',
      '/version',
      'definition.version',
      'Tool version must be semver x.y.z (pre-release allowed), got "1.0"',
    ],
    [
      'version',
      'v1.0.0',
      '/version',
      'definition.version',
      'Tool version must be semver x.y.z (pre-release allowed), got "v1.0.0"',
    ],
    ['version', 1, '/version', 'definition.version', 'Tool version must be semver x.y.z (pre-release allowed), got 1'],
    [
      'code',
      'export async function execute() {}',
      '/code',
      'definition.code',
      'code must be an object with a "source" string, got "export async function execute() {}"',
    ],
    ['limits', 5000, '/limits', 'definition.limits', 'limits must be an object, got 5000'],
    [
      'required_secrets',
      'KEY',
      '/required_secrets',
      'definition.secrets',
      'required_secrets must be an array of names, got "KEY"',
    ],
  ])('refuses %s = %j', (key, value, path, code, message) => {
    const result = validateToolDefinition({ ...weather(), [key]: value }, AGENT);
    expect(result.ok).toBe(false);
    expect(result.tool).toBeUndefined();
    expect(result.errors).toEqual([{ code, path, message }]);
  });

  it.each([
    [
      { language: 'python', source: SOURCE },
      '/code/language',
      'code.language must be "typescript" or "javascript", got "python"',
    ],
    [{ language: 'typescript', source: 42 }, '/code/source', 'code.source must be a string, got 42'],
    [{ language: 'typescript' }, '/code/source', 'code.source must be a string, got undefined'],
  ])('refuses code %j', (code, path, message) => {
    expect(validateToolDefinition({ ...weather(), code }, AGENT).errors).toEqual([
      { code: 'definition.code', path, message },
    ]);
  });

  it.each([
    [{ timeout_ms: 0 }, '/limits/timeout_ms', 'limits.timeout_ms must be an integer from 1 to 300000, got 0'],
    [{ timeout_ms: 300001 }, '/limits/timeout_ms', 'limits.timeout_ms must be an integer from 1 to 300000, got 300001'],
    [{ timeout_ms: 1.5 }, '/limits/timeout_ms', 'limits.timeout_ms must be an integer from 1 to 300000, got 1.5'],
    [{ memory_mb: 8 }, '/limits/memory_mb', 'limits.memory_mb must be an integer from 16 to 1024, got 8'],
    [{ memory_mb: '64' }, '/limits/memory_mb', 'limits.memory_mb must be an integer from 16 to 1024, got "64"'],
    [{ cpu_percent: 150 }, '/limits/cpu_percent', 'limits.cpu_percent must be a number from 1 to 100, got 150'],
    [{ isolation: 'thread' }, '/limits/isolation', 'limits.isolation must be "warm" or "process", got "thread"'],
    [{ isolation: true }, '/limits/isolation', 'limits.isolation must be "warm" or "process", got true'],
  ])('refuses limits %j', (limits, path, message) => {
    expect(validateToolDefinition({ ...weather(), limits }, AGENT).errors).toEqual([
      { code: 'definition.limits', path, message },
    ]);
  });

  it('accepts the limits at their bounds and warns about unknown limits', () => {
    const result = validateToolDefinition(
      { ...weather(), limits: { timeout_ms: 300000, memory_mb: 16, gpu: 1 } },
      AGENT,
    );
    expect(result.tool).toMatchObject({ timeoutMs: 300000, memoryMb: 16 });
    expect(result.warnings).toContainEqual({
      code: 'definition.limits',
      path: '/limits/gpu',
      message: 'Unknown limit "gpu" ignored',
    });
  });

  it('limits.isolation "process" marks the tool; "warm" or none leaves the default', () => {
    expect(validateToolDefinition({ ...weather(), limits: { isolation: 'process' } }, AGENT).tool).toMatchObject({
      isolation: 'process',
    });
    expect(validateToolDefinition({ ...weather(), limits: { isolation: 'warm' } }, AGENT).tool).not.toHaveProperty(
      'isolation',
    );
    expect(validateToolDefinition(weather(), AGENT).tool).not.toHaveProperty('isolation');
  });

  it('refuses bad and duplicate secret names', () => {
    const result = validateToolDefinition({ ...weather(), required_secrets: ['API_KEY', '1BAD', 'API_KEY', 7] }, AGENT);
    expect(result.errors).toEqual([
      {
        code: 'definition.secrets',
        path: '/required_secrets/1',
        message: 'Secret name must match ^[A-Za-z_][A-Za-z0-9_.-]{0,127}$, got "1BAD"',
      },
      { code: 'definition.secrets', path: '/required_secrets/2', message: 'Duplicate secret name "API_KEY"' },
      {
        code: 'definition.secrets',
        path: '/required_secrets/3',
        message: 'Secret name must match ^[A-Za-z_][A-Za-z0-9_.-]{0,127}$, got 7',
      },
    ]);
  });

  it('screens the source with the validated permissions: net granted by the host list, read not', () => {
    const source =
      'export async function execute() {\n  await Deno.connect({ hostname: "x.example.com", port: 443 });\n  return Deno.readTextFile("/etc/passwd");\n}';
    const result = validateToolDefinition({ ...weather(), code: { source } }, AGENT);
    expect(result.errors).toEqual([
      {
        code: 'screen.deno-permission',
        path: '/code/source',
        message: 'Deno.readTextFile needs the "read" permission, which this tool does not have',
        line: 3,
        column: 10,
      },
    ]);
  });

  it('collects errors from every layer at once, and never returns a tool with errors', () => {
    const result = validateToolDefinition(
      {
        ...weather(),
        name: 'X',
        permissions: { net: ['localhost'], run: true },
        code: { source: 'export function execute() { return eval("1"); }' },
        examples: [],
      },
      AGENT,
    );
    expect(result.ok).toBe(false);
    expect(result.tool).toBeUndefined();
    expect(result.errors.map((e) => [e.code, e.path])).toEqual([
      ['definition.name', '/name'],
      ['permission.net-blocked', '/permissions/net/0'],
      ['permission.denied', '/permissions/run'],
      ['screen.no-execute', '/code/source'],
      ['screen.eval', '/code/source'],
      ['schema.examples', '/examples'],
    ]);
  });

  it('lets a bootstrapped tool use permissions from bootstrapAllow, and screening honours them', () => {
    const source = 'export async function execute() { return Deno.env.get("TZ") ?? "UTC"; }';
    const context = { ...weather(), permissions: { env: true }, code: { source } };
    expect(validateToolDefinition(context, AGENT).errors.map((e) => e.message)).toEqual([
      'Environment access not allowed for user-created tools; declare required_secrets and read context.secrets',
      'Deno.env needs the "env" permission, which this tool does not have',
    ]);
    const bootstrap = validateToolDefinition(context, {
      origin: 'bootstrap',
      config: { ...config, bootstrapAllow: ['env'] },
      validator,
    });
    expect(bootstrap.errors).toEqual([]);
    expect(bootstrap.tool?.extraPermissions).toEqual(['env']);
  });

  it('accepts a javascript tool and a tool_spec without the optional fields', () => {
    const spec = {
      name: 'echo',
      description: 'Echo',
      code: { language: 'javascript', source: 'export const execute = async (input) => input;' },
      input_schema: { type: 'object' },
      output_schema: { type: 'object' },
      examples: [{ description: 'x', input: { a: 1 }, output: { a: 1 }, match: 'exact' }],
    };
    const result = validateToolDefinition(spec, { origin: 'agent', config, validator });
    expect(result.ok).toBe(true);
    expect(result.tool?.language).toBe('javascript');
  });

  it.each([[null], ['tool'], [[]]])('refuses a definition that is not an object: %j', (context) => {
    expect(validateToolDefinition(context, AGENT)).toEqual({
      ok: false,
      errors: [
        {
          code: 'definition.invalid',
          path: '',
          message: `Tool definition must be an object, got ${JSON.stringify(context)}`,
        },
      ],
      warnings: [],
    });
  });
});

describe('validateToolDefinition: contract', () => {
  it('keeps a valid contract on the tool', () => {
    const contract = {
      side_effect: 'reversible-write',
      idempotent: true,
      rate_limits: { per_agent: { limit: 5, window_ms: 1000 } },
    };
    const result = validateToolDefinition({ ...weather(), contract }, AGENT);
    expect(result.ok).toBe(true);
    expect(result.tool?.contract).toEqual(contract);
  });

  it('rejects a bad contract with path-precise errors', () => {
    const result = validateToolDefinition(
      {
        ...weather(),
        contract: { side_effect: 'sometimes', rate_limits: { per_tool: { limit: 0, window_ms: 1000 } }, colour: 'red' },
      },
      AGENT,
    );
    expect(result.ok).toBe(false);
    const contractErrors = result.errors
      .filter((e) => e.code === 'contract.invalid')
      .map((e) => e.path)
      .sort();
    expect(contractErrors).toEqual(['/contract', '/contract/rate_limits/per_tool/limit', '/contract/side_effect']);
  });

  it('rejects a contract that is not an object', () => {
    const result = validateToolDefinition({ ...weather(), contract: 'read-only' }, AGENT);
    expect(result.errors.filter((e) => e.code === 'contract.invalid')).toEqual([
      { code: 'contract.invalid', path: '/contract', message: expect.stringContaining('object') },
    ]);
  });
});

describe('upstream shape and operator limits', () => {
  const validator = createSchemaValidator();
  const base = (): Record<string, unknown> => ({
    name: 'up',
    code: { source: 'export async function execute() { return {}; }' },
    input_schema: { type: 'object' },
    output_schema: { type: 'object' },
    examples: [{ description: 'e', input: {} }],
  });

  it("definitionOf: the record's description and semantic_version fill a context that lacks them; the context wins", () => {
    const filled = definitionOf(base(), {
      title: 'T',
      description: 'From the record',
      semantic_version: '2.0.0',
      llm_hints: {},
    });
    expect(filled).toMatchObject({ description: 'From the record', version: '2.0.0' });
    const own = { ...base(), description: 'own', version: '1.2.3' };
    expect(definitionOf(own, { description: 'other', semantic_version: '9.9.9' })).toBe(own);
    const result = validateToolDefinition(filled, { origin: 'agent', config: defaultConfig(), validator });
    expect(result.ok && result.tool.version).toBe('2.0.0');
  });

  it('timeouts: agents stay under maxTimeoutMs; bootstrapped tools may go up to bootstrapMaxTimeoutMs, beyond which the flag is named', () => {
    const config = defaultConfig();
    const day = { ...base(), description: 'd', limits: { timeout_ms: 86_400_000 } };
    expect(validateToolDefinition(day, { origin: 'bootstrap', config, validator }).ok).toBe(true);
    expect(validateToolDefinition(day, { origin: 'agent', config, validator }).errors).toEqual([
      {
        code: 'definition.limits',
        path: '/limits/timeout_ms',
        message: `limits.timeout_ms must be an integer from 1 to ${config.maxTimeoutMs}, got 86400000`,
      },
    ]);
    expect(
      validateToolDefinition(day, {
        origin: 'bootstrap',
        config: defaultConfig({ bootstrapMaxTimeoutMs: 3_600_000 }),
        validator,
      }).errors,
    ).toEqual([
      {
        code: 'definition.limits',
        path: '/limits/timeout_ms',
        message:
          'limits.timeout_ms 86400000 is over the operator maximum for bootstrapped tools (bootstrapMaxTimeoutMs 3600000)',
        fix: '--bootstrap-max-timeout-ms 86400000',
      },
    ]);
  });

  it('cpu_percent below 100 becomes cpuPercent; context.bootstrap.mode "continuous" marks the tool continuous', () => {
    const result = validateToolDefinition(
      { ...base(), description: 'd', limits: { cpu_percent: 20 }, bootstrap: { mode: 'continuous' } },
      { origin: 'bootstrap', config: defaultConfig(), validator },
    );
    expect(result.ok && [result.tool.cpuPercent, result.tool.continuous]).toEqual([20, true]);
  });
});
