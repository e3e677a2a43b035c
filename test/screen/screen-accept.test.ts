import { describe, expect, it } from 'vitest';
import { NO_EXECUTE_MESSAGE, screenSource, type Issue } from '../../src/screen/index.js';

const NONE = { net: [] as string[], extraPermissions: [] as string[] };
const screen = (
  source: string,
  language: 'typescript' | 'javascript' = 'typescript',
  maxSourceBytes = 200 * 1024,
): Issue[] => screenSource(source, { permissions: NONE, maxSourceBytes, language });
const tool = (body: string): string => `export async function execute(input: any) {\n${body}\n}\n`;

// Ordinary code that a regex screen (or a careless AST screen) would wrongly reject.
const ACCEPTED: Array<[string, string]> = [
  ['upstream false positive: prefs.fs style access', 'const prefs = { fs: 1, x: 2 }; return prefs.fs + prefs.x;'],
  ['a method named eval on an object', 'const obj = { eval: (s: string) => s }; return obj.eval("x");'],
  [
    'eval as an object key and in a class',
    'class Calc { eval(expr: string) { return expr; } }\nreturn { eval: 1, require: 2, Function: 3 };',
  ],
  ['one-level constructor checks', 'return input.constructor === Object || input.constructor.name === "Array";'],
  ['a local function named require', 'function require(name: string) { return name; }\nreturn require("fs");'],
  [
    'a parameter named require',
    'const load = (require: (s: string) => string) => require("x");\nreturn load((s) => s);',
  ],
  ['a local Function shadowing the global', 'const Function = (s: string) => s;\nreturn Function("x");'],
  [
    'strings and comments mentioning eval( and require(',
    '// eval("x") and require("fs")\n/* new Function("y") */\nreturn "eval(1) require(2) import(3)";',
  ],
  ['template literals', 'const code = `new Function(${JSON.stringify(input)}) eval(${1})`;\nreturn code;'],
  ['typeof require guard', 'return typeof require === "undefined";'],
  [
    'Function in instanceof and typeof',
    'return input instanceof Function || typeof Function === "function" || input === Function;',
  ],
  ['Function.prototype methods', 'return Function.prototype.toString.call(execute);'],
  [
    'static global access',
    'return globalThis.fetch === fetch && globalThis["crypto"] !== undefined && window === undefined;',
  ],
  [
    'fetch and web APIs',
    'const res = await fetch("https://api.example.com/x", { headers: { "content-type": "application/json" } });\nreturn await res.json();',
  ],
  [
    'JSON-heavy code',
    'const data = JSON.parse(JSON.stringify({ a: [1, 2, { b: "c" }], "key-with-dash": null }));\nreturn Object.entries(data).map(([k, v]) => ({ k, v }));',
  ],
  [
    'Object and Reflect helpers on ordinary values',
    'return [Object.keys(input), Reflect.ownKeys(input), Object.getPrototypeOf(input)];',
  ],
  [
    'computed access on ordinary objects',
    'const table: Record<string, number> = { a: 1 };\nreturn table[input.key] ?? input[input.other];',
  ],
  [
    'labels, loops, switch, try/catch',
    'outer: for (const x of [1, 2]) { for (let i = 0; i < 2; i++) { if (i) continue outer; break outer; } }\nswitch (input.k) { case 1: break; default: }\ntry { throw new Error("x"); } catch (error) { return String(error); }',
  ],
  [
    'destructuring ordinary values',
    'const { a, b: { c = 1 } = {}, ...rest } = input;\nconst [x, , y = 2] = [1, 2];\nreturn { a, c, rest, x, y };',
  ],
  [
    'feature checks on the global object',
    'if (typeof globalThis !== "undefined" && globalThis.fetch) { return "fetch" in globalThis && globalThis === self; }\nconst g = globalThis ?? window;\nreturn g.crypto.randomUUID() + (globalThis ? 1 : 0);',
  ],
  [
    'ordinary use of built-in methods and constructors',
    'const xs = [3, 1].map((n) => n * 2).sort();\nreturn [xs.constructor === Array, String(xs), new Map([[1, 2]]).get(1), Object.assign({}, input)];',
  ],
  ['Deno APIs that need no permission', 'return { pid: Deno.pid, mem: Deno.memoryUsage() };'],
];

const TS_FEATURES = `
interface Input { query: string; limit?: number }
type Output = { items: string[]; total: number };
type Evaluator = typeof eval;
enum Mode { Fast = 'fast', Slow = 'slow' }
namespace Util { export const twice = (n: number): number => n * 2; }
abstract class Base<T> { protected abstract run(input: T): Promise<T>; }
class Service<T extends object> extends Base<T> {
  private readonly cache = new Map<string, T>();
  constructor(private readonly name: string, public limit = 10) { super(); }
  protected async run(input: T): Promise<T> { return input; }
  static create<U extends object>(): Service<U> { return new Service<U>('x'); }
}
function identity<T>(value: T): T { return value; }
declare const VERSION: string;
const total = await Promise.resolve(Util.twice(2));

export async function execute(input: Input): Promise<Output> {
  const mode = Mode.Fast as Mode;
  const service = Service.create<{ a: number }>();
  const items = identity<string[]>([input.query, mode]) satisfies string[];
  const limit = input.limit! ?? service.limit;
  return { items: items.slice(0, limit), total: <number>total };
}
`;

describe('screenSource: accepted code (no false positives)', () => {
  it.each(ACCEPTED)('%s', (_name, body) => {
    expect(screen(tool(body))).toEqual([]);
  });

  it('accepts TypeScript types, interfaces, generics, enums, namespaces, classes, `as`, top-level await', () => {
    expect(screen(TS_FEATURES)).toEqual([]);
  });

  it('accepts plain JavaScript with language "javascript"', () => {
    expect(screen('export const execute = async (input) => ({ ok: input !== null });', 'javascript')).toEqual([]);
  });
});

describe('screenSource: the execute export', () => {
  const ACCEPT: Array<[string, string]> = [
    ['export async function', 'export async function execute(input: unknown) { return input; }'],
    ['export const async arrow', 'export const execute = async (input: unknown): Promise<unknown> => input;'],
    [
      'export const async function expression',
      'export const execute = async function (input: unknown) { return input; };',
    ],
    [
      'export const with TS assertion',
      'export const execute = (async (input: unknown) => input) as (i: unknown) => Promise<unknown>;',
    ],
    ['export { execute }', 'async function execute() { return 1; }\nexport { execute };'],
    ['export { impl as execute }', 'const impl = async () => 1;\nexport { impl as execute };'],
    [
      'TS overloads',
      'export async function execute(i: string): Promise<string>;\nexport async function execute(i: unknown) { return i; }',
    ],
  ];
  it.each(ACCEPT)('accepts %s', (_name, source) => {
    expect(screen(source)).toEqual([]);
  });

  const REJECT: Array<[string, string, number | undefined, number | undefined]> = [
    ['no export at all', 'async function execute() {}', undefined, undefined],
    ['a differently named export', 'export async function run() {}', undefined, undefined],
    ['a default export', 'export default async function execute() {}', undefined, undefined],
    ['a non-async function', 'export function execute() { return Promise.resolve(1); }', 1, 1],
    ['a non-async arrow', 'export const execute = () => 1;', 1, 1],
    ['an async generator', 'export async function* execute() {}', 1, 1],
    ['a non-function value', 'export const execute = 42;', 1, 1],
    ['export { x as execute } of a sync function', 'function impl() {}\nexport { impl as execute };', 2, 10],
    [
      'export { execute } of a let assigned later',
      'let execute: any;\nexecute = async () => 1;\nexport { execute };',
      4 - 1,
      10,
    ],
  ];
  it.each(REJECT)('rejects %s', (_name, source, line, column) => {
    const issue: Issue = { code: 'screen.no-execute', path: '/code/source', message: NO_EXECUTE_MESSAGE };
    if (line !== undefined) Object.assign(issue, { line, column });
    expect(screen(source)).toEqual([issue]);
  });

  it('keeps the RCRT parity message', () => {
    expect(NO_EXECUTE_MESSAGE).toBe('Code must export an async function named "execute"');
  });
});

describe('screenSource: size and syntax', () => {
  it('rejects a source over maxSourceBytes before parsing, counting UTF-8 bytes', () => {
    const source = tool(`return "${'é'.repeat(200)}";`); // 2 bytes per é
    const bytes = Buffer.byteLength(source);
    expect(screen(source, 'typescript', bytes)).toEqual([]);
    expect(screen(source + '\n{', 'typescript', bytes)).toEqual([
      {
        code: 'screen.source-size',
        path: '/code/source',
        message: `Source is ${bytes + 2} bytes; the maximum is ${bytes} bytes`,
      },
    ]);
  });

  it.each([
    ['unexpected token', 'const x = ;', 'Syntax error: Unexpected token', 1, 11],
    [
      'unterminated string',
      'export async function execute() {\n  return "abc;\n}',
      'Syntax error: Unterminated string constant',
      2,
      10,
    ],
    [
      'TS syntax in a javascript tool',
      'export async function execute(input: string) {}',
      'Syntax error: Unexpected token',
      1,
      36,
    ],
    [
      'duplicate export',
      'export async function execute() {}\nexport const execute = 1;',
      "Syntax error: Identifier 'execute' has already been declared",
      2,
      14,
    ],
  ])("reports %s with acorn's position", (name, source, message, line, column) => {
    const language = name.includes('javascript') ? 'javascript' : 'typescript';
    expect(screen(source, language)).toEqual([{ code: 'screen.parse', path: '/code/source', message, line, column }]);
  });

  // Deep nesting exhausts the stack either in acorn or in the rule walk; both end in one clear finding.
  it.each([
    ['arrays', `${'['.repeat(20000)}${']'.repeat(20000)}`],
    ['unary operators', `${'!'.repeat(3000)}1`],
    ['a long operator chain', `1${'+1'.repeat(50000)}`],
  ])('refuses absurdly deep %s instead of overflowing the stack', (_name, expression) => {
    const issues = screen(tool(`return ${expression};`));
    expect(issues).toHaveLength(1);
    expect(issues[0]?.code).toBe('screen.parse');
    expect(issues[0]?.message).toMatch(/^Source is nested too deeply to (parse|screen)$/);
  });
});
