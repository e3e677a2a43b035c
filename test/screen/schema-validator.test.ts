import { describe, expect, it } from 'vitest';
import { canonicalJson, createSchemaValidator, schemaDialect } from '../../src/screen/index.js';

const ITEMS = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    mode: { enum: ['fast', 'slow'] },
    email: { type: 'string', format: 'email' },
  },
  required: ['items'],
};

describe('createSchemaValidator', () => {
  const validator = createSchemaValidator();

  it('accepts valid data', () => {
    expect(
      validator.validate(ITEMS, { items: [{ name: 'a', count: 1 }], mode: 'fast', email: 'a@example.com' }),
    ).toEqual({ valid: true, errors: [] });
  });

  it('reports every error with a JSON pointer to the offending value', () => {
    const result = validator.validate(ITEMS, {
      items: [{ count: -1, extra: true }, { name: 7 }],
      mode: 'medium',
      email: 'nope',
    });
    expect(result.valid).toBe(false);
    expect(result.errors).toEqual([
      { path: '/items/0/name', message: "must have required property 'name'" },
      { path: '/items/0/extra', message: 'must NOT have additional properties' },
      { path: '/items/0/count', message: 'must be >= 0' },
      { path: '/items/1/name', message: 'must be string' },
      { path: '/mode', message: 'must be equal to one of the allowed values: ["fast","slow"]' },
      { path: '/email', message: 'must match format "email"' },
    ]);
  });

  it('reports a root error at path ""', () => {
    expect(validator.validate(ITEMS, 'text')).toEqual({
      valid: false,
      errors: [{ path: '', message: 'must be object' }],
    });
  });

  it('escapes property names in paths (RFC 6901)', () => {
    const schema = { type: 'object', required: ['a/b', 'c~d'] };
    expect(validator.validate(schema, {}).errors.map((e) => e.path)).toEqual(['/a~1b', '/c~0d']);
  });

  it('picks the dialect from $schema: draft-07 by default, 2019-09 and 2020-12 on request', () => {
    const tuple2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'array',
      prefixItems: [{ type: 'string' }],
      items: false,
    };
    expect(validator.validate(tuple2020, ['a']).valid).toBe(true);
    expect(validator.validate(tuple2020, ['a', 'b']).errors).toEqual([
      { path: '', message: 'must NOT have more than 1 items' },
    ]);
    const draft7 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'array',
      items: [{ type: 'string' }],
      additionalItems: false,
    };
    expect(validator.validate(draft7, ['a', 'b']).errors).toEqual([
      { path: '', message: 'must NOT have more than 1 items' },
    ]);
    const draft2019 = {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      unevaluatedProperties: false,
      properties: { a: {} },
    };
    expect(validator.validate(draft2019, { a: 1, b: 2 }).errors).toEqual([
      { path: '/b', message: 'must NOT have unevaluated properties' },
    ]);
    expect(schemaDialect({})).toBe('draft-07');
    expect(schemaDialect({ $schema: 'http://json-schema.org/draft-04/schema#' })).toEqual({
      error: 'Unsupported $schema "http://json-schema.org/draft-04/schema#"; use draft-07, 2019-09 or 2020-12',
    });
  });

  it("check() returns ajv's reason for a schema that does not compile; validate() turns it into an error", () => {
    expect(validator.check({ type: 'strnig' })).toMatch(
      /^schema is invalid: data\/type must be equal to one of the allowed values/,
    );
    expect(validator.check({ $ref: '#/definitions/missing' })).toMatch(
      /can't resolve reference #\/definitions\/missing/,
    );
    expect(validator.check({ type: 'string', pattern: '(' })).toBe(
      'pattern "(" is not a valid regular expression: Invalid regular expression: /(/u: Unterminated group',
    );
    expect(validator.check([] as unknown as object)).toBe('a schema must be an object, got []');
    expect(validator.validate({ type: 'strnig' }, 1)).toEqual({
      valid: false,
      errors: [{ path: '', message: expect.stringMatching(/^schema does not compile: schema is invalid/) }],
    });
  });

  it('caches by canonical JSON: key order does not matter, and equal schemas share one compiled function', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    const small = createSchemaValidator({ maxCached: 2 });
    const a = { type: 'object', properties: { x: { type: 'number' } } };
    const b = { properties: { x: { type: 'number' } }, type: 'object' };
    expect(small.validate(a, { x: 'no' }).errors).toEqual([{ path: '/x', message: 'must be number' }]);
    expect(small.validate(b, { x: 1 }).valid).toBe(true);
  });

  it('follows a mutable schema that changes (keyed by content), and remembers frozen ones by identity', () => {
    const mutable: { type: string } = { type: 'integer' };
    expect(validator.validate(mutable, 'x').valid).toBe(false);
    mutable.type = 'string';
    expect(validator.validate(mutable, 'x').valid).toBe(true);

    const small = createSchemaValidator({ maxCached: 1 });
    const frozen = Object.freeze({ type: 'object', required: Object.freeze(['a']) });
    expect(small.validate(frozen, {}).errors).toEqual([{ path: '/a', message: "must have required property 'a'" }]);
    expect(small.validate({ type: 'string' }, 1).valid).toBe(false); // evicts the frozen schema
    expect(small.validate(frozen, { a: 1 }).valid).toBe(true);
    expect(small.validate(frozen, {}).valid).toBe(false);
  });

  it('stays correct when the LRU evicts schemas (and their ajv copies)', () => {
    const small = createSchemaValidator({ maxCached: 2 });
    for (let round = 0; round < 3; round++) {
      for (let n = 0; n < 5; n++) {
        const schema = { $id: 'https://example.com/same-id', type: 'integer', maximum: n };
        expect(small.validate(schema, n).valid).toBe(true);
        expect(small.validate(schema, n + 1).errors).toEqual([{ path: '', message: `must be <= ${n}` }]);
      }
    }
  });
});
