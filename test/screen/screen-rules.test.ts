import { describe, expect, it } from 'vitest';
import { screenSource, type Issue } from '../../src/screen/index.js';

const NONE = { net: [] as string[], extraPermissions: [] as string[] };
const screen = (source: string, permissions = NONE, language: 'typescript' | 'javascript' = 'typescript'): Issue[] =>
  screenSource(source, { permissions, maxSourceBytes: 200 * 1024, language });

/** A tool whose body is `body`, starting on line 2, column 1. */
const tool = (body: string): string => `export async function execute(input: any) {\n${body}\n}\n`;

type Finding = [code: string, message: string, line: number, column: number];
const at = (issues: Issue[]): Finding[] => issues.map((i) => [i.code, i.message, i.line ?? 0, i.column ?? 0]);

// Each row: the code inside execute (line 2) and every finding expected, exactly.
const REJECTED: Array<[string, string, Finding[]]> = [
  // --- screen.eval
  ['direct eval', 'return eval("1+1");', [['screen.eval', 'eval is not allowed: eval("1+1")', 2, 8]]],
  [
    'indirect (0, eval)',
    'return (0, eval)(input.code);',
    [['screen.eval', 'eval is not allowed: (0, eval)(input.code)', 2, 12]],
  ],
  [
    'globalThis.eval',
    'return globalThis.eval(input.code);',
    [['screen.eval', 'eval is not allowed: globalThis.eval(input.code)', 2, 8]],
  ],
  ['window.eval', 'window.eval("x");', [['screen.eval', 'eval is not allowed: window.eval("x")', 2, 1]]],
  ['self.eval', 'self.eval("x");', [['screen.eval', 'eval is not allowed: self.eval("x")', 2, 1]]],
  [
    'globalThis["eval"] (static key)',
    'globalThis["eval"]("x");',
    [['screen.eval', 'eval is not allowed: globalThis["eval"]("x")', 2, 1]],
  ],
  ['aliasing eval', 'const e = eval; return e("1");', [['screen.eval', 'eval is not allowed: eval', 2, 11]]],
  [
    'eval via an alias of globalThis',
    'const g = globalThis; g.eval("1");',
    [['screen.eval', 'eval is not allowed: g.eval("1")', 2, 23]],
  ],
  [
    'optional call globalThis?.eval',
    'globalThis?.eval?.("1");',
    [['screen.eval', 'eval is not allowed: globalThis?.eval?.("1")', 2, 1]],
  ],
  // --- screen.function-constructor
  [
    'new Function',
    'return new Function("return 1")();',
    [['screen.function-constructor', 'The Function constructor is not allowed: new Function("return 1")', 2, 12]],
  ],
  [
    'Function(...)',
    'return Function("return 1")();',
    [['screen.function-constructor', 'The Function constructor is not allowed: Function("return 1")', 2, 8]],
  ],
  [
    'async arrow constructor',
    'const F = (async () => {}).constructor;',
    [['screen.function-constructor', 'The Function constructor is not allowed: (async () => {}).constructor', 2, 11]],
  ],
  [
    'generator constructor',
    'const G = (function* () {}).constructor;',
    [['screen.function-constructor', 'The Function constructor is not allowed: (function* () {}).constructor', 2, 11]],
  ],
  [
    'x.constructor.constructor',
    'return input.constructor.constructor("return this")();',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: input.constructor.constructor("return this")',
        2,
        8,
      ],
    ],
  ],
  [
    '[].constructor.constructor',
    '[].constructor.constructor("x")();',
    [['screen.function-constructor', 'The Function constructor is not allowed: [].constructor.constructor("x")', 2, 1]],
  ],
  [
    'getPrototypeOf(async fn).constructor',
    'const A = Object.getPrototypeOf(async function () {}).constructor;',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: Object.getPrototypeOf(async function () {}).constructor',
        2,
        11,
      ],
    ],
  ],
  [
    'prototype of a prototype',
    'Object.getPrototypeOf(Object.getPrototypeOf(async () => {})).constructor("x");',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: Object.getPrototypeOf(Object.getPrototypeOf(async () => {...',
        2,
        1,
      ],
    ],
  ],
  [
    '__proto__ of a function',
    '(async () => {}).__proto__.constructor("x");',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: (async () => {}).__proto__.constructor("x")',
        2,
        1,
      ],
    ],
  ],
  [
    'unicode escapes in names',
    '\\u0065val("x");\nglobalThis["\\x65val"]("y");',
    [
      ['screen.eval', 'eval is not allowed: \\u0065val("x")', 2, 1],
      ['screen.eval', 'eval is not allowed: globalThis["\\x65val"]("y")', 3, 1],
    ],
  ],
  [
    'Reflect.construct(Function, ...)',
    'Reflect.construct(Function, ["return 1"]);',
    [['screen.function-constructor', 'The Function constructor is not allowed: Function', 2, 19]],
  ],
  [
    'Function.prototype.constructor',
    'Function.prototype.constructor("x");',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: Function.prototype.constructor("x")',
        2,
        1,
      ],
    ],
  ],
  [
    'AsyncFunction lookup',
    'new AsyncFunction("x");',
    [['screen.function-constructor', 'The Function constructor is not allowed: new AsyncFunction("x")', 2, 5]],
  ],
  [
    'GeneratorFunction on globalThis',
    'globalThis.GeneratorFunction;',
    [['screen.function-constructor', 'The Function constructor is not allowed: globalThis.GeneratorFunction', 2, 1]],
  ],
  [
    "a local function's constructor",
    'function f() {}\nf.constructor("x");',
    [['screen.function-constructor', 'The Function constructor is not allowed: f.constructor("x")', 3, 1]],
  ],
  [
    'constructor by destructuring',
    'const { constructor: C } = async () => {};',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: { constructor: C } = async () => {}',
        2,
        9,
      ],
    ],
  ],
  [
    'constructor["constructor"] with string keys',
    'input["constructor"]["constructor"]("x");',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: input["constructor"]["constructor"]("x")',
        2,
        1,
      ],
    ],
  ],
  [
    'class extends Function',
    'class F extends Function {}',
    [['screen.function-constructor', 'The Function constructor is not allowed: Function', 2, 17]],
  ],
  [
    "a built-in method's constructor",
    '[].map.constructor("return 1")();',
    [['screen.function-constructor', 'The Function constructor is not allowed: [].map.constructor("return 1")', 2, 1]],
  ],
  [
    "a global function's constructor",
    'fetch.constructor("x");',
    [['screen.function-constructor', 'The Function constructor is not allowed: fetch.constructor("x")', 2, 1]],
  ],
  [
    'Object.constructor',
    'Object.constructor("x");',
    [['screen.function-constructor', 'The Function constructor is not allowed: Object.constructor("x")', 2, 1]],
  ],
  [
    'globalThis.constructor.constructor',
    'globalThis.constructor.constructor("x");',
    [
      [
        'screen.function-constructor',
        'The Function constructor is not allowed: globalThis.constructor.constructor("x")',
        2,
        1,
      ],
    ],
  ],
  [
    'input.toString.constructor',
    'input.toString.constructor("x");',
    [['screen.function-constructor', 'The Function constructor is not allowed: input.toString.constructor("x")', 2, 1]],
  ],
  // --- screen.dynamic-import
  [
    'import()',
    'await import("npm:left-pad");',
    [['screen.dynamic-import', 'Dynamic import is not allowed: import("npm:left-pad")', 2, 7]],
  ],
  [
    'import() of a data URL',
    'await import(`data:text/javascript,${input.js}`);',
    [['screen.dynamic-import', 'Dynamic import is not allowed: import(`data:text/javascript,${input.js}`)', 2, 7]],
  ],
  // --- screen.require
  [
    'require()',
    'const fs = require("fs");',
    [['screen.require', 'require is not available; tools must be self-contained: require("fs")', 2, 12]],
  ],
  [
    'module.require',
    'module.require("fs");',
    [['screen.require', 'require is not available; tools must be self-contained: module.require("fs")', 2, 1]],
  ],
  [
    'globalThis.require',
    'globalThis.require("fs");',
    [['screen.require', 'require is not available; tools must be self-contained: globalThis.require("fs")', 2, 1]],
  ],
  // --- screen.computed-global
  [
    'upstream bypass globalThis["ev"+"al"]',
    'return globalThis["ev" + "al"]("1");',
    [['screen.computed-global', 'Computed access to a global object is not allowed: globalThis["ev" + "al"]', 2, 8]],
  ],
  [
    'window[k]',
    'window[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: window[input.k]', 2, 1]],
  ],
  [
    'self[k]',
    'self[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: self[input.k]', 2, 1]],
  ],
  [
    'global[k]',
    'global[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: global[input.k]', 2, 1]],
  ],
  [
    'Deno[k]',
    'Deno[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: Deno[input.k]', 2, 1]],
  ],
  [
    'Reflect.get(globalThis, k)',
    'Reflect.get(globalThis, input.k);',
    [
      [
        'screen.computed-global',
        'Reflective access to a global object is not allowed: Reflect.get(globalThis, input.k)',
        2,
        1,
      ],
    ],
  ],
  [
    'Object.getOwnPropertyDescriptor(window, k)',
    'Object.getOwnPropertyDescriptor(window, input.k);',
    [
      [
        'screen.computed-global',
        'Reflective access to a global object is not allowed: Object.getOwnPropertyDescriptor(window, input.k)',
        2,
        1,
      ],
    ],
  ],
  [
    'destructuring globalThis',
    'const { eval: e } = globalThis;',
    [['screen.computed-global', 'Destructuring a global object is not allowed: { eval: e } = globalThis', 2, 7]],
  ],
  [
    'alias then computed access',
    'const g = globalThis;\nconst k = "ev" + "al";\ng[k]("1");',
    [['screen.computed-global', 'Computed access to a global object is not allowed: g[k]', 4, 1]],
  ],
  [
    'alias declared after use (hoisting)',
    'function f(k: string) { return g[k]; }\nvar g = globalThis;',
    [['screen.computed-global', 'Computed access to a global object is not allowed: g[k]', 2, 32]],
  ],
  [
    'alias through assignment',
    'let g: any;\ng = self;\ng[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: g[input.k]', 4, 1]],
  ],
  [
    'alias through a conditional',
    'const g = typeof window !== "undefined" ? window : globalThis;\ng[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: g[input.k]', 3, 1]],
  ],
  [
    'alias through TS assertion',
    'const g = globalThis as any;\ng[input.k];',
    [['screen.computed-global', 'Computed access to a global object is not allowed: g[input.k]', 3, 1]],
  ],
  [
    'globalThis.globalThis[k]',
    'globalThis.globalThis[input.k];',
    [
      [
        'screen.computed-global',
        'Computed access to a global object is not allowed: globalThis.globalThis[input.k]',
        2,
        1,
      ],
    ],
  ],
  [
    'global object as a Proxy target',
    'const p = new Proxy(globalThis, {});',
    [
      [
        'screen.computed-global',
        'A global object may only be used through its properties: new Proxy(globalThis, {})',
        2,
        21,
      ],
    ],
  ],
  [
    'global object in an array',
    'const list = [globalThis];\nlist[0][input.k];',
    [['screen.computed-global', 'A global object may only be used through its properties: [globalThis]', 2, 15]],
  ],
  [
    'global object passed to a function',
    'function pick(o: any, k: string) { return o[k]; }\npick(self, input.k);',
    [['screen.computed-global', 'A global object may only be used through its properties: pick(self, input.k)', 3, 6]],
  ],
  [
    'global object returned',
    'return window;',
    [['screen.computed-global', 'A global object may only be used through its properties: return window;', 2, 8]],
  ],
  [
    'global object stored in a property',
    'const o: any = {};\no.g = globalThis;',
    [['screen.computed-global', 'A global object may only be used through its properties: o.g = globalThis', 3, 7]],
  ],
  [
    'global object in an object literal',
    'const o = { g: globalThis };',
    [['screen.computed-global', 'A global object may only be used through its properties: g: globalThis', 2, 16]],
  ],
  [
    'an alias passed on',
    'const g = globalThis || self;\nuse(g);',
    [['screen.computed-global', 'A global object may only be used through its properties: use(g)', 3, 5]],
  ],
  [
    'Deno passed on',
    'use(Deno);',
    [['screen.computed-global', 'A global object may only be used through its properties: use(Deno)', 2, 5]],
  ],
  [
    'rest destructuring of Deno',
    'const { ...all } = Deno;',
    [['screen.computed-global', 'Computed or rest destructuring of Deno is not allowed: { ...all } = Deno', 2, 9]],
  ],
  // --- screen.deno-permission
  [
    'Deno.readTextFile',
    'await Deno.readTextFile("/etc/passwd");',
    [['screen.deno-permission', 'Deno.readTextFile needs the "read" permission, which this tool does not have', 2, 7]],
  ],
  [
    'Deno.writeTextFile',
    'await Deno.writeTextFile("/tmp/x", "y");',
    [
      [
        'screen.deno-permission',
        'Deno.writeTextFile needs the "write" permission, which this tool does not have',
        2,
        7,
      ],
    ],
  ],
  [
    'new Deno.Command',
    'new Deno.Command("sh");',
    [['screen.deno-permission', 'Deno.Command needs the "run" permission, which this tool does not have', 2, 5]],
  ],
  [
    'Deno.env',
    'Deno.env.get("HOME");',
    [['screen.deno-permission', 'Deno.env needs the "env" permission, which this tool does not have', 2, 1]],
  ],
  [
    'Deno.connect',
    'await Deno.connect({ hostname: "x.com", port: 80 });',
    [['screen.deno-permission', 'Deno.connect needs the "net" permission, which this tool does not have', 2, 7]],
  ],
  [
    'Deno.listen',
    'Deno.listen({ port: 0 });',
    [['screen.deno-permission', 'Deno.listen needs the "net" permission, which this tool does not have', 2, 1]],
  ],
  [
    'Deno.serve',
    'Deno.serve(() => new Response());',
    [['screen.deno-permission', 'Deno.serve needs the "net" permission, which this tool does not have', 2, 1]],
  ],
  [
    'Deno.resolveDns',
    'await Deno.resolveDns("x.com", "A");',
    [['screen.deno-permission', 'Deno.resolveDns needs the "net" permission, which this tool does not have', 2, 7]],
  ],
  [
    'Deno.dlopen',
    'Deno.dlopen("libc.so.6", {});',
    [['screen.deno-permission', 'Deno.dlopen needs the "ffi" permission, which this tool does not have', 2, 1]],
  ],
  [
    'Deno.hostname',
    'Deno.hostname();',
    [['screen.deno-permission', 'Deno.hostname needs the "sys" permission, which this tool does not have', 2, 1]],
  ],
  [
    'Deno.copyFile needs two',
    'await Deno.copyFile("a", "b");',
    [
      [
        'screen.deno-permission',
        'Deno.copyFile needs the "read" and "write" permissions, which this tool does not have',
        2,
        7,
      ],
    ],
  ],
  [
    'Deno API via alias',
    'const D = Deno;\nD.readFile("/etc/hostname");',
    [['screen.deno-permission', 'Deno.readFile needs the "read" permission, which this tool does not have', 3, 1]],
  ],
  [
    'Deno API via destructuring',
    'const { readTextFile } = Deno;',
    [['screen.deno-permission', 'Deno.readTextFile needs the "read" permission, which this tool does not have', 2, 9]],
  ],
  [
    'globalThis.Deno["env"]',
    'globalThis.Deno["env"].toObject();',
    [['screen.deno-permission', 'Deno.env needs the "env" permission, which this tool does not have', 2, 1]],
  ],
  // --- several findings, in source order
  [
    'several rules at once',
    'const f = require("fs");\neval("x");\nglobalThis[input.k];',
    [
      ['screen.require', 'require is not available; tools must be self-contained: require("fs")', 2, 11],
      ['screen.eval', 'eval is not allowed: eval("x")', 3, 1],
      ['screen.computed-global', 'Computed access to a global object is not allowed: globalThis[input.k]', 4, 1],
    ],
  ],
];

describe('screenSource: rejected code', () => {
  it.each(REJECTED)('%s', (_name, body, expected) => {
    expect(at(screen(tool(body)))).toEqual(expected);
  });

  it('finds eval in enum initializers, namespaces, defaults, computed keys, decorators and TS import aliases', () => {
    const source = [
      'enum E { A = eval("1") }',
      'namespace N { eval("2"); }',
      'function f(a = eval("3")) { return a; }',
      'class C { [eval("4")]() {} }',
      '@((x: any) => eval(x)) class D {}',
      'import e = globalThis.eval;',
      'export async function execute() {}',
    ].join('\n');
    expect(at(screen(source))).toEqual([
      ['screen.eval', 'eval is not allowed: eval("1")', 1, 14],
      ['screen.eval', 'eval is not allowed: eval("2")', 2, 15],
      ['screen.eval', 'eval is not allowed: eval("3")', 3, 16],
      ['screen.eval', 'eval is not allowed: eval("4")', 4, 12],
      ['screen.eval', 'eval is not allowed: eval(x)', 5, 15],
      ['screen.eval', 'eval is not allowed: globalThis.eval', 6, 12],
    ]);
  });

  it('puts every source finding at /code/source', () => {
    for (const issue of screen(tool('eval("x"); require("y");'))) expect(issue.path).toBe('/code/source');
  });
});

describe('screenSource: static imports', () => {
  const EXEC = '\nexport async function execute() {}';
  it.each([
    [
      'import default',
      'import fs from "node:fs";',
      'Import of "node:fs" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'import side effect',
      'import "https://esm.sh/x";',
      'Import of "https://esm.sh/x" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'import with attributes',
      'import t from "/etc/passwd" with { type: "text" };',
      'Import of "/etc/passwd" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'import type',
      'import type { X } from "./types.ts";',
      'Import of "./types.ts" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'export * from',
      'export * from "./x.ts";',
      'Re-export from "./x.ts" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'export { a } from',
      'export { a } from "./x.ts";',
      'Re-export from "./x.ts" is not allowed; tools must be self-contained',
      1,
    ],
    [
      'import x = require()',
      'import fs = require("fs");',
      'Import of "fs" is not allowed; tools must be self-contained',
      1,
    ],
  ])('%s', (_name, line, message, column) => {
    expect(at(screen(line + EXEC))).toEqual([['screen.static-import', message, 1, column]]);
  });
});

describe('screenSource: Deno permissions the tool has', () => {
  it('allows Deno.connect with a net host list and Deno.readTextFile with extra "read"', () => {
    const body = 'await Deno.connect({ hostname: "api.example.com", port: 443 });\nawait Deno.readTextFile("/data/x");';
    expect(screen(tool(body), { net: ['api.example.com'], extraPermissions: ['read'] })).toEqual([]);
    expect(at(screen(tool(body), { net: ['api.example.com'], extraPermissions: [] }))).toEqual([
      ['screen.deno-permission', 'Deno.readTextFile needs the "read" permission, which this tool does not have', 3, 7],
    ]);
  });

  it('reports only the missing half of a two-permission API', () => {
    expect(at(screen(tool('Deno.renameSync("a", "b");'), { net: [], extraPermissions: ['write'] }))).toEqual([
      ['screen.deno-permission', 'Deno.renameSync needs the "read" permission, which this tool does not have', 2, 1],
    ]);
  });

  it('ignores Deno APIs that need no permission', () => {
    expect(screen(tool('return [Deno.pid, Deno.cwd(), Deno.memoryUsage(), Deno.version.deno];'))).toEqual([]);
  });
});
