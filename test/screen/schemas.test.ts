import { describe, expect, it } from 'vitest';
import { createSchemaValidator, validateSchemas, type SchemaContext } from '../../src/screen/index.js';

const validator = createSchemaValidator();
const check = (context: SchemaContext) => validateSchemas(context, { validator });

const INPUT = {
  type: 'object',
  properties: {
    count: { type: 'integer', description: 'How many' },
    label: { type: 'string', description: 'A label' },
  },
  required: ['count'],
};
const OUTPUT = { type: 'object', properties: { total: { type: 'number', description: 'Sum' } }, required: ['total'] };
const base = (over: Partial<SchemaContext> = {}): SchemaContext => ({
  input_schema: INPUT,
  output_schema: OUTPUT,
  examples: [{ description: 'Two', input: { count: 2 }, output: { total: 2 } }],
  ...over,
});

describe('validateSchemas', () => {
  it('passes a complete definition and normalises examples (match defaults to "schema")', () => {
    expect(check(base())).toEqual({
      errors: [],
      warnings: [],
      examples: [{ description: 'Two', input: { count: 2 }, output: { total: 2 }, match: 'schema' }],
    });
  });

  it.each([
    ['input_schema', undefined, 'input_schema is required'],
    ['input_schema', 'object', 'input_schema must be a JSON Schema object, got "object"'],
    ['output_schema', [], 'output_schema must be a JSON Schema object, got []'],
    ['output_schema', null, 'output_schema must be a JSON Schema object, got null'],
  ])('%s = %j is refused', (key, value, message) => {
    expect(check(base({ [key]: value })).errors).toEqual([{ code: 'schema.invalid', path: `/${key}`, message }]);
  });

  it("refuses a schema that does not compile, with ajv's text, and skips validating examples against it", () => {
    const result = check(base({ input_schema: { type: 'object', properties: { a: { type: 'nope' } } } }));
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatchObject({ code: 'schema.invalid', path: '/input_schema' });
    expect(result.errors[0]?.message).toMatch(
      /^input_schema is not a valid JSON Schema: schema is invalid: data\/properties\/a\/type must be equal to one of the allowed values/,
    );
  });

  it('refuses `required` keys missing from properties (RCRT message), also in nested objects', () => {
    const input = {
      type: 'object',
      properties: {
        user: {
          type: 'object',
          description: 'User',
          properties: { id: { type: 'string', description: 'Id' } },
          required: ['id', 'email'],
        },
      },
      required: ['user', 'query'],
    };
    expect(
      check(base({ input_schema: input, examples: [{ input: { user: { id: 'x', email: 'e' }, query: 1 } }] })).errors,
    ).toEqual([
      {
        code: 'schema.required',
        path: '/input_schema/required/1',
        message: "Required field 'query' not found in properties",
      },
      {
        code: 'schema.required',
        path: '/input_schema/properties/user/required/1',
        message: "Required field 'email' not found in properties",
      },
    ]);
  });

  it('does not apply the required rule where composition can supply the key', () => {
    const input = { type: 'object', allOf: [{ properties: { a: { type: 'string' } } }], required: ['a'] };
    expect(check(base({ input_schema: input, examples: [{ input: { a: 'x' } }] })).errors).toEqual([]);
  });

  it('warns for every property without a description, recursing through nested properties and items', () => {
    const input = {
      type: 'object',
      properties: {
        query: { type: 'string' },
        filters: {
          type: 'object',
          description: 'Filters',
          properties: { tag: { type: 'string' }, since: { type: 'string', description: ' ' } },
        },
        list: {
          type: 'array',
          description: 'List',
          items: { type: 'object', properties: { id: { type: 'integer' } } },
        },
      },
    };
    expect(check(base({ input_schema: input, examples: [{ description: 'x', input: {} }] })).warnings).toEqual([
      {
        code: 'schema.description',
        path: '/input_schema/properties/query',
        message: 'properties/query has no description',
      },
      {
        code: 'schema.description',
        path: '/input_schema/properties/filters/properties/tag',
        message: 'properties/filters/properties/tag has no description',
      },
      {
        code: 'schema.description',
        path: '/input_schema/properties/filters/properties/since',
        message: 'properties/filters/properties/since has no description',
      },
      {
        code: 'schema.description',
        path: '/input_schema/properties/list/items/properties/id',
        message: 'properties/list/items/properties/id has no description',
      },
    ]);
  });

  it('accepts patterns that would backtrack on RegExp (they run on RE2), refuses what RE2 cannot run, wherever it is', () => {
    const input = {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Name', pattern: '^(a+)+$' },
        look: { type: 'string', description: 'L', pattern: '^(?!admin)\\w+$' },
        safe: { type: 'string', description: 'S', pattern: '^[a-z]+$' },
      },
      patternProperties: { '^(\\w+\\s?)*$': { type: 'string' }, '(x)\\1': { type: 'string' } },
    };
    expect(check(base({ input_schema: input, examples: [{ input: {} }] })).errors).toEqual([
      {
        code: 'schema.unsafe-pattern',
        path: '/input_schema/properties/look/pattern',
        message:
          'Pattern "^(?!admin)\\\\w+$" is not supported by the linear-time regex engine (RE2: no back-references, lookahead or lookbehind): error parsing regexp: invalid or unsupported Perl syntax: `(?!`',
      },
      {
        code: 'schema.unsafe-pattern',
        path: '/input_schema/patternProperties/(x)\\1',
        message:
          'Pattern "(x)\\\\1" is not supported by the linear-time regex engine (RE2: no back-references, lookahead or lookbehind): back-reference "\\\\1"',
      },
    ]);
    const { look: _look, ...properties } = input.properties;
    expect(
      check(base({ input_schema: { type: 'object', properties }, examples: [{ input: { name: 'aaa' } }] })).errors,
    ).toEqual([]);
    expect(
      check(base({ input_schema: { type: 'object', properties }, examples: [{ input: { name: 'aab!' } }] })).errors,
    ).toEqual([
      {
        code: 'schema.example-input',
        path: '/examples/0/input/name',
        message: 'Example 0 input at /name must match pattern "^(a+)+$"',
      },
    ]);
  });

  it.each([
    [undefined, 'At least one example is required'],
    [[], 'At least one example is required'],
    [{ input: {} }, 'examples must be an array, got {"input":{}}'],
  ])('examples = %j is refused', (examples, message) => {
    expect(check(base({ examples })).errors).toEqual([{ code: 'schema.examples', path: '/examples', message }]);
  });

  it('validates every example input and output against its schema, reporting each ajv error with its path', () => {
    const examples = [
      { description: 'ok', input: { count: 1 }, output: { total: 1 } },
      { description: 'bad input', input: { count: 'two', label: 3 }, output: { total: 2 } },
      { description: 'bad output', input: { count: 1 }, output: { sum: 'x' } },
      { description: 'no output is fine', input: { count: 1 } },
      { description: 'root mismatch', input: 'text' },
    ];
    expect(check(base({ examples })).errors).toEqual([
      {
        code: 'schema.example-input',
        path: '/examples/1/input/count',
        message: 'Example 1 input at /count must be integer',
      },
      {
        code: 'schema.example-input',
        path: '/examples/1/input/label',
        message: 'Example 1 input at /label must be string',
      },
      {
        code: 'schema.example-output',
        path: '/examples/2/output/total',
        message: "Example 2 output at /total must have required property 'total'",
      },
      { code: 'schema.example-input', path: '/examples/4/input', message: 'Example 4 input must be object' },
    ]);
  });

  it("checks each example's shape, match and description", () => {
    const examples = [
      'not an object',
      { description: 'no input' },
      { description: 'bad match', input: { count: 1 }, match: 'fuzzy' },
      { description: 'exact needs output', input: { count: 1 }, match: 'exact' },
      { input: { count: 1 }, output: { total: 1 }, match: 'exact' },
    ];
    const result = check(base({ examples }));
    expect(result.errors).toEqual([
      { code: 'schema.example', path: '/examples/0', message: 'Example 0 must be an object, got "not an object"' },
      { code: 'schema.example-input', path: '/examples/1/input', message: 'Example 1 has no "input"' },
      {
        code: 'schema.example',
        path: '/examples/2/match',
        message: 'Example 2 match must be "exact" or "schema", got "fuzzy"',
      },
      { code: 'schema.example', path: '/examples/3/output', message: 'Example 3 has match "exact" but no "output"' },
    ]);
    expect(result.warnings).toEqual([
      { code: 'schema.example', path: '/examples/4/description', message: 'Example 4 has no description' },
    ]);
    expect(result.examples.at(-1)).toEqual({
      description: 'Example 5',
      input: { count: 1 },
      output: { total: 1 },
      match: 'exact',
    });
  });

  it('works without a validator passed in (builds its own)', () => {
    expect(validateSchemas(base(), { validator }).errors).toEqual([]);
  });
});
