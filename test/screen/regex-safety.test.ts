// Schema patterns run on the linear-time engine (regex-safety.ts): classic catastrophic patterns are
// harmless there, patterns RE2 cannot run are definition errors naming the pattern, every validation
// has a work budget, and the engine's per-pattern caches do not accumulate.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  checkSchemaPattern,
  createSchemaValidator,
  DEFAULT_REGEX_BUDGET,
  MAX_REGEX_FORMAT_LENGTH,
  MAX_PATTERN_LENGTH,
  PER_CHARACTER_STEPS,
  MAX_PROGRAM_SIZE,
  MAX_SCHEMA_PATTERNS,
  validateSchemas,
} from '../../src/screen/index.js';
import { EVIL } from './evil-patterns.js';

describe('schema patterns on the linear-time engine', () => {
  const validator = createSchemaValidator();

  it.each(EVIL)('%s compiles, and answers the input that freezes RegExp (match: %#)', (pattern, hostile, matches) => {
    expect(checkSchemaPattern(pattern)).toMatchObject({ ok: true });
    const errors = matches ? [] : [{ path: '', message: `must match pattern "${pattern}"` }];
    expect(validator.validate({ type: 'string', pattern }, hostile)).toEqual({ valid: matches, errors });
    const keyErrors = matches
      ? [{ path: `/${hostile.replace(/~/g, '~0').replace(/\//g, '~1')}`, message: 'must be integer' }]
      : [];
    expect(
      validator.validate({ type: 'object', patternProperties: { [pattern]: { type: 'integer' } } }, { [hostile]: 'x' }),
    ).toEqual({ valid: !matches, errors: keyErrors });
  });

  it('matches as JSON Schema means it (unanchored, ECMA-262 syntax translated)', () => {
    const cases: Array<[string, string, boolean]> = [
      ['^(.*){16}x$', 'abcx', true],
      ['^(a+)+$', 'aaaa', true],
      ['b+', 'abba', true],
      ['^b+', 'abba', false],
      ['^(?<year>\\d{4})-(?<month>\\d{2})$', '2024-05', true],
      ['^\\u00e9+$', 'ééé', true],
      ['^\\u{1F600}$', '😀', true],
      ['^\\p{L}+$', 'Grüße', true],
      ['^[^]$', '\n', true],
      ['^\\d{1,3}(\\.\\d{1,3}){3}$', '10.0.0.1', true],
      ['^\\d{1,3}(\\.\\d{1,3}){3}$', '10.0.0', false],
      ['^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$', 'a.b@example.org', true],
      ['^\\/api\\/v1$', '/api/v1', true],
      ['^\\\\1$', '\\1', true], // an escaped backslash before a digit is no back-reference
    ];
    for (const [pattern, text, expected] of cases) {
      expect([pattern, text, validator.validate({ type: 'string', pattern }, text).valid]).toEqual([
        pattern,
        text,
        expected,
      ]);
    }
  });

  it('keeps different patterns apart in one ajv instance (compiled patterns are keyed by source)', () => {
    expect(validator.validate({ type: 'string', pattern: '^a$' }, 'a').valid).toBe(true);
    expect(validator.validate({ type: 'string', pattern: '^b$' }, 'a').valid).toBe(false);
    expect(validator.validate({ type: 'string', pattern: '^b$' }, 'b').valid).toBe(true);
    expect(
      validator.validate(
        { type: 'object', patternProperties: { '^x': { type: 'string' }, '^y': { type: 'integer' } } },
        { x1: 's', y1: 1 },
      ).valid,
    ).toBe(true);
    expect(
      validator.validate(
        { type: 'object', patternProperties: { '^x': { type: 'string' }, '^y': { type: 'integer' } } },
        { y1: 's' },
      ).errors,
    ).toEqual([{ path: '/y1', message: 'must be integer' }]);
  });

  const UNSUPPORTED =
    'is not supported by the linear-time regex engine (RE2: no back-references, lookahead or lookbehind)';
  const RE2_SAYS = `${UNSUPPORTED}: error parsing regexp:`;
  it.each([
    ['(a)\\1', `${UNSUPPORTED}: back-reference "\\\\1"`],
    ['(a)(b)(c)(d)(e)(f)(g)(h)(i)\\9', `${UNSUPPORTED}: back-reference "\\\\9"`],
    ['(?<n>a)\\k<n>', `${UNSUPPORTED}: back-reference "\\\\k<n>"`],
    ['a(?=b)', `${RE2_SAYS} invalid or unsupported Perl syntax: \`(?=\``],
    ['a(?!b)', `${RE2_SAYS} invalid or unsupported Perl syntax: \`(?!\``],
    ['(?<=a)b', `${RE2_SAYS} invalid named capture: \`(?<=a)b\``],
    ['(?<!a)b', `${RE2_SAYS} invalid named capture: \`(?<!a)b\``],
    ['(?i)abc', 'is not a valid regular expression: Invalid regular expression: /(?i)abc/u: Invalid group'],
    ['(', 'is not a valid regular expression: Invalid regular expression: /(/u: Unterminated group'],
    [
      '\\p{L}{0,1000}\\p{N}',
      `compiles to 2003 instructions; at most ${MAX_PROGRAM_SIZE} are allowed (shrink counted repetitions like {0,1000})`,
    ],
    ['(a{999}){999}', `${RE2_SAYS} invalid repeat count: \`{999}\``],
    [
      'a'.repeat(MAX_PATTERN_LENGTH + 1),
      `is ${MAX_PATTERN_LENGTH + 1} characters long; at most ${MAX_PATTERN_LENGTH} are allowed`,
    ],
  ])('refuses %s with its reason, as a definition error naming the pattern and its path', (pattern, reason) => {
    expect(checkSchemaPattern(pattern)).toEqual({ ok: false, reason });
    expect(validator.check({ type: 'string', pattern })).toBe(
      `pattern ${JSON.stringify(pattern).slice(0, 119)}${JSON.stringify(pattern).length > 120 ? '…' : ''} ${reason}`,
    );
    const where = {
      type: 'object',
      properties: {
        deep: { type: 'array', description: 'D', items: { type: 'object', patternProperties: { [pattern]: {} } } },
      },
    };
    const result = validateSchemas(
      { input_schema: where, output_schema: { type: 'object' }, examples: [{ input: {} }] },
      { validator },
    );
    expect(result.errors).toEqual([
      {
        code: 'schema.unsafe-pattern',
        path: `/input_schema/properties/deep/items/patternProperties/${pattern.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        message: `Pattern ${JSON.stringify(pattern).length > 120 ? JSON.stringify(pattern).slice(0, 119) + '…' : JSON.stringify(pattern)} ${reason}`,
      },
    ]);
  });

  it(`refuses a schema with more than ${MAX_SCHEMA_PATTERNS} patterns, or nested too deeply to inspect`, () => {
    const many = {
      type: 'object',
      patternProperties: Object.fromEntries(Array.from({ length: MAX_SCHEMA_PATTERNS + 1 }, (_, i) => [`^p${i}$`, {}])),
    };
    expect(
      validateSchemas(
        { input_schema: many, output_schema: { type: 'object' }, examples: [{ input: {} }] },
        { validator },
      ).errors,
    ).toEqual([
      {
        code: 'schema.unsafe-pattern',
        path: '/input_schema',
        message: `input_schema holds ${MAX_SCHEMA_PATTERNS + 1} patterns; at most ${MAX_SCHEMA_PATTERNS} are allowed`,
      },
    ]);
    let deep: Record<string, unknown> = { type: 'string', pattern: '(a)\\1' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { x: deep } };
    expect(
      validateSchemas(
        { input_schema: { type: 'object' }, output_schema: deep, examples: [{ input: {} }] },
        { validator },
      ).errors,
    ).toEqual([
      { code: 'schema.invalid', path: '/output_schema', message: 'output_schema is nested deeper than 64 levels' },
    ]);
  });

  it('caps the "regex" format: its check compiles the data as a RegExp (never runs it)', () => {
    const schema = { type: 'string', format: 'regex' };
    expect(validator.validate(schema, '^(a+)+$')).toEqual({ valid: true, errors: [] });
    expect(validator.validate(schema, 'a'.repeat(MAX_REGEX_FORMAT_LENGTH))).toEqual({ valid: true, errors: [] });
    expect(validator.validate(schema, 'a'.repeat(MAX_REGEX_FORMAT_LENGTH + 1))).toEqual({
      valid: false,
      errors: [{ path: '', message: 'must match format "regex"' }],
    });
    expect(validator.validate(schema, '(')).toEqual({
      valid: false,
      errors: [{ path: '', message: 'must match format "regex"' }],
    });
    expect(validator.validate(schema, 'a\\Z')).toEqual({
      valid: false,
      errors: [{ path: '', message: 'must match format "regex"' }],
    });
  });

  it('refuses $async schemas, whose promise would otherwise read as "valid"', () => {
    expect(validator.check({ $async: true, type: 'string' })).toBe('schemas using "$async" are not supported');
    expect(validator.validate({ $async: true, type: 'string' }, 42)).toEqual({
      valid: false,
      errors: [{ path: '', message: 'schema does not compile: schemas using "$async" are not supported' }],
    });
  });
});

describe('the regex work budget of one validation', () => {
  const budgetMessage = (pattern: string, length: number, budget: number) =>
    `checking a string of ${length} characters against pattern "${pattern}" would exceed the regex work budget of ${budget} steps for one validation (cost: length x pattern size); send shorter strings or use a simpler pattern`;

  it('refuses, without running it, a check that would cost more than the budget', () => {
    const validator = createSchemaValidator();
    const long = 'a'.repeat(1_000_000);
    expect(validator.validate({ type: 'string', pattern: '^(a+)+$' }, long)).toEqual({
      valid: false,
      errors: [{ path: '', message: budgetMessage('^(a+)+$', 1_000_000, DEFAULT_REGEX_BUDGET) }],
    });
    // a string without a pattern is never charged
    expect(validator.validate({ type: 'string', maxLength: 2_000_000 }, long)).toEqual({ valid: true, errors: [] });
  });

  it('is shared by every pattern check of one validation, and renewed for the next', () => {
    const size = 6; // RE2 program size of ^a+$
    expect(checkSchemaPattern('^a+$')).toEqual({ ok: true, programSize: size });
    const item = 'a'.repeat(99); // (99 + 1) x (6 + 16) = 2200 steps per check
    const validator = createSchemaValidator({ regexBudget: 20 * (99 + 1) * (size + PER_CHARACTER_STEPS) });
    const schema = { type: 'array', items: { type: 'string', pattern: '^a+$' } };
    expect(validator.validate(schema, Array(20).fill(item))).toEqual({ valid: true, errors: [] });
    expect(validator.validate(schema, Array(21).fill(item))).toEqual({
      valid: false,
      errors: [{ path: '', message: budgetMessage('^a+$', 99, 44_000) }],
    });
    expect(validator.validate(schema, Array(20).fill(item))).toEqual({ valid: true, errors: [] });
    // property names checked by patternProperties count too
    const keys = Object.fromEntries(
      Array.from({ length: 21 }, (_, i) => ['a'.repeat(97) + String(i).padStart(2, '0'), 1]),
    );
    expect(validator.validate({ type: 'object', patternProperties: { '^a+$': { type: 'integer' } } }, keys)).toEqual({
      valid: false,
      errors: [{ path: '', message: budgetMessage('^a+$', 99, 44_000) }],
    });
  });

  it("drops each pattern's DFA after a validation, so hostile inputs over many schemas do not pile up memory", () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const validator = createSchemaValidator();
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const text = Array.from({ length: 1500 }, () => (random() < 0.5 ? 'a' : 'b')).join('');
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let n = 0; n < 40; n++) {
      // each forces RE2's DFA through thousands of states (megabytes each when kept)
      const pattern = `[ab]*a[ab]{${20 + n}}$`;
      expect(validator.validate({ type: 'string', pattern }, text).valid).toBe(new RegExp(pattern).test(text));
    }
    gc();
    const grownMb = (process.memoryUsage().heapUsed - before) / 1e6;
    expect(grownMb).toBeLessThan(40);
  });
});
