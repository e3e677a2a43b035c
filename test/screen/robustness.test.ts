import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import {
  createSchemaValidator,
  IssueCode,
  screenSource,
  validateToolDefinition,
  type Issue,
} from '../../src/screen/index.js';

// Hostile input must always come back as findings, never as an exception. These tests feed
// deterministic pseudo-random mutations (fixed seed, so a failure reproduces) through the API.

function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const CODES = new Set<string>(Object.values(IssueCode));
const BASE = `interface In { q: string }
export async function execute(input: In): Promise<{ n: number }> {
  const g = globalThis as any; const e = eval; const f = new Function("x");
  const { a = 1, ...rest } = input as any; label: for (const k of [1]) { break label; }
  return { n: [1, 2].map((x) => x * 2).length + Deno.pid + (await fetch(\`https://x.example.com/\${input.q}\`)).status };
}
`;
const TOKENS = [
  '(',
  ')',
  '{',
  '}',
  '[',
  ']',
  '<',
  '>',
  '=>',
  '`',
  '"',
  "'",
  '/',
  '*',
  ';',
  ',',
  '.',
  '?.',
  '...',
  'as',
  'async',
  'await',
  'import',
  'export',
  'eval',
  'globalThis',
  '\\u0065',
  '\n',
  ' ',
  '@',
  '#',
  'class',
  'enum',
  'function*',
];

function wellFormed(issue: Issue): boolean {
  const positioned =
    issue.line === undefined ||
    (Number.isInteger(issue.line) && issue.line >= 1 && Number.isInteger(issue.column) && (issue.column ?? 0) >= 1);
  return (
    CODES.has(issue.code) &&
    typeof issue.message === 'string' &&
    issue.message.length > 0 &&
    issue.path === '/code/source' &&
    positioned
  );
}

describe('robustness', () => {
  it('screenSource never throws on mutated sources, and every finding is well-formed', () => {
    const random = rng(42);
    const permissions = { net: [], extraPermissions: [] };
    for (let round = 0; round < 300; round++) {
      let source = BASE;
      const edits = 1 + Math.floor(random() * 4);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(random() * source.length);
        const cut = Math.floor(random() * 6);
        const token = TOKENS[Math.floor(random() * TOKENS.length)] as string;
        source = source.slice(0, at) + (random() < 0.7 ? token : '') + source.slice(at + cut);
      }
      for (const language of ['typescript', 'javascript'] as const) {
        const issues = screenSource(source, { permissions, maxSourceBytes: 10_000, language });
        expect(issues.every(wellFormed), JSON.stringify({ source, issues })).toBe(true);
      }
    }
  });

  it('validateToolDefinition never throws on malformed definitions', () => {
    const random = rng(7);
    const config = defaultConfig();
    const validator = createSchemaValidator();
    const values: unknown[] = [
      undefined,
      null,
      true,
      0,
      -1,
      1.5,
      '',
      'x',
      [],
      [1],
      {},
      { type: 'nope' },
      { $ref: '#/x' },
      { __proto__: { a: 1 } },
      { type: 'string', pattern: '(' },
      ['localhost'],
      { net: true },
      { timeout_ms: 'x' },
      [{ input: 1 }],
      'export async function execute() {}',
    ];
    const keys = [
      'name',
      'description',
      'version',
      'code',
      'input_schema',
      'output_schema',
      'permissions',
      'limits',
      'required_secrets',
      'examples',
    ];
    for (let round = 0; round < 300; round++) {
      const context: Record<string, unknown> = {};
      for (const key of keys) if (random() < 0.8) context[key] = values[Math.floor(random() * values.length)];
      if (random() < 0.5)
        context.code = {
          source: values[Math.floor(random() * values.length)],
          language: values[Math.floor(random() * values.length)],
        };
      const result = validateToolDefinition(context, {
        origin: random() < 0.5 ? 'agent' : 'bootstrap',
        config,
        validator,
      });
      expect(result.ok).toBe(result.errors.length === 0);
      for (const issue of [...result.errors, ...result.warnings]) {
        expect(CODES.has(issue.code), JSON.stringify(issue)).toBe(true);
        expect(issue.path === '' || issue.path.startsWith('/')).toBe(true);
      }
    }
  });
});
