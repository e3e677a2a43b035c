// Static "what is this value?" for the few kinds of value the rules care about.
//
// `kindOf(expr, scope)` answers, without running anything, whether an expression evaluates to the
// global object, `Deno`, `eval`, a Function constructor (Function / AsyncFunction / GeneratorFunction),
// a function value, a function prototype, etc. It follows local aliases (via scope bindings), member
// chains with static keys, `Reflect.get(o, "k")`, `Object.getPrototypeOf(f)`, and value-preserving
// wrappers (`(0, x)`, `a || b`, `c ? a : b`, `await x`, TS assertions). Anything else is unknown.

import { type AstNode, child, children, staticKey, unwrap } from './ast.js';
import { resolve, type Scope } from './scope.js';

/** The kinds of value screening tracks. */
export const ValueKind = {
  Global: 'global',
  Deno: 'deno',
  Eval: 'eval',
  FunctionCtor: 'function-ctor',
  FunctionValue: 'function-value',
  FunctionProto: 'function-proto',
  ConstructorOf: 'constructor-of',
  Reflect: 'reflect',
  ObjectCtor: 'object',
  Require: 'require',
  Module: 'module',
} as const;

export type ValueKind = (typeof ValueKind)[keyof typeof ValueKind];

/** Names that denote the global object itself. */
export const GLOBAL_OBJECT_NAMES: ReadonlySet<string> = new Set(['globalThis', 'window', 'self', 'global']);

const GLOBAL_NAMES: ReadonlyMap<string, ValueKind> = new Map<string, ValueKind>([
  ...[...GLOBAL_OBJECT_NAMES].map((name) => [name, ValueKind.Global] as [string, ValueKind]),
  ['Deno', ValueKind.Deno],
  ['eval', ValueKind.Eval],
  ['Function', ValueKind.FunctionCtor],
  ['AsyncFunction', ValueKind.FunctionCtor],
  ['GeneratorFunction', ValueKind.FunctionCtor],
  ['AsyncGeneratorFunction', ValueKind.FunctionCtor],
  ['Reflect', ValueKind.Reflect],
  ['Object', ValueKind.ObjectCtor],
  ['require', ValueKind.Require],
  ['module', ValueKind.Module],
]);

// Global functions and constructors: their `.constructor` is Function (`fetch.constructor("code")`).
const GLOBAL_FUNCTIONS: ReadonlySet<string> = new Set([
  'fetch',
  'parseInt',
  'parseFloat',
  'isNaN',
  'isFinite',
  'setTimeout',
  'setInterval',
  'clearTimeout',
  'clearInterval',
  'queueMicrotask',
  'structuredClone',
  'encodeURI',
  'encodeURIComponent',
  'decodeURI',
  'decodeURIComponent',
  'atob',
  'btoa',
  'escape',
  'unescape',
  'String',
  'Number',
  'Boolean',
  'Array',
  'Symbol',
  'BigInt',
  'Date',
  'RegExp',
  'Error',
  'TypeError',
  'Promise',
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'WeakRef',
  'Proxy',
  'ArrayBuffer',
  'DataView',
  'Uint8Array',
  'URL',
  'URLSearchParams',
  'Request',
  'Response',
  'Headers',
  'TextEncoder',
  'TextDecoder',
  'AbortController',
  'Blob',
]);

// Methods every object, array, string, function or common built-in has: `[].map.constructor` is Function.
const BUILTIN_METHODS: ReadonlySet<string> = new Set([
  'toString',
  'valueOf',
  'toLocaleString',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'call',
  'apply',
  'bind',
  'map',
  'filter',
  'forEach',
  'reduce',
  'reduceRight',
  'find',
  'findIndex',
  'findLast',
  'some',
  'every',
  'push',
  'pop',
  'shift',
  'unshift',
  'slice',
  'splice',
  'concat',
  'join',
  'indexOf',
  'lastIndexOf',
  'includes',
  'sort',
  'reverse',
  'flat',
  'flatMap',
  'keys',
  'values',
  'entries',
  'at',
  'fill',
  'log',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'max',
  'min',
  'floor',
  'ceil',
  'round',
  'random',
  'abs',
  'sqrt',
  'pow',
  'parse',
  'stringify',
  'now',
  'assign',
  'freeze',
  'create',
  'resolve',
  'reject',
  'all',
  'race',
  'then',
  'catch',
  'finally',
  'fromCharCode',
  'charAt',
  'charCodeAt',
  'codePointAt',
  'split',
  'replace',
  'replaceAll',
  'trim',
  'toUpperCase',
  'toLowerCase',
  'padStart',
  'padEnd',
  'startsWith',
  'endsWith',
  'repeat',
  'substring',
  'match',
  'matchAll',
  'test',
  'exec',
  'get',
  'set',
  'has',
  'delete',
  'add',
  'clear',
  'from',
  'of',
  'isArray',
  'json',
  'text',
  'arrayBuffer',
]);

const FUNCTION_LIKE: ReadonlySet<ValueKind | undefined> = new Set<ValueKind | undefined>([
  ValueKind.FunctionValue,
  ValueKind.FunctionProto,
  ValueKind.ConstructorOf,
  ValueKind.FunctionCtor,
  ValueKind.ObjectCtor,
]);

/** The kind of the global variable `name` (when it is not shadowed). */
export function globalKind(name: string): ValueKind | undefined {
  return GLOBAL_NAMES.get(name) ?? (GLOBAL_FUNCTIONS.has(name) ? ValueKind.FunctionValue : undefined);
}

/** The kind of `object[name]` given the kind of `object`. */
export function memberKind(object: ValueKind | undefined, name: string): ValueKind | undefined {
  if (name === 'constructor') return FUNCTION_LIKE.has(object) ? ValueKind.FunctionCtor : ValueKind.ConstructorOf;
  if (object === ValueKind.Global) return globalKind(name);
  if (object !== ValueKind.Deno && BUILTIN_METHODS.has(name)) return ValueKind.FunctionValue;
  if (name === 'prototype' && object === ValueKind.FunctionCtor) return ValueKind.FunctionProto;
  if (name === '__proto__' && (object === ValueKind.FunctionValue || object === ValueKind.FunctionCtor))
    return ValueKind.FunctionProto;
  if (name === 'require' && object === ValueKind.Module) return ValueKind.Require;
  return undefined;
}

/** A memoising classifier bound to one module's scopes. */
export interface Classifier {
  kindOf(expr: AstNode, scope: Scope): ValueKind | undefined;
  /** Drops memoised answers (aliases changed). */
  reset(): void;
}

/** Creates the classifier; memo entries are per node, so one instance serves one parse. */
export function createClassifier(): Classifier {
  let memo = new Map<AstNode, ValueKind | null>();

  const kindOf = (expr: AstNode, scope: Scope): ValueKind | undefined => {
    const cached = memo.get(expr);
    if (cached !== undefined) return cached ?? undefined;
    memo.set(expr, null); // cycle guard: a self-referencing alias classifies as unknown
    const kind = compute(unwrap(expr), scope);
    memo.set(expr, kind ?? null);
    return kind;
  };

  const compute = (node: AstNode, scope: Scope): ValueKind | undefined => {
    switch (node.type) {
      case 'Identifier': {
        const binding = resolve(node.name as string, scope);
        return binding ? (binding.alias as ValueKind | undefined) : globalKind(node.name as string);
      }
      case 'MemberExpression': {
        const object = child(node, 'object');
        const property = child(node, 'property');
        const name = property ? staticKey(property, node.computed === true) : undefined;
        return object && name !== undefined ? memberKind(kindOf(object, scope), name) : undefined;
      }
      case 'TSQualifiedName': {
        const left = child(node, 'left');
        const right = child(node, 'right');
        return left && right ? memberKind(kindOf(left, scope), right.name as string) : undefined;
      }
      case 'CallExpression':
        return callKind(node, scope);
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
      case 'ClassExpression':
      case 'FunctionDeclaration':
      case 'ClassDeclaration':
        return ValueKind.FunctionValue;
      case 'SequenceExpression': {
        const last = children(node, 'expressions').at(-1);
        return last ? kindOf(last, scope) : undefined;
      }
      case 'LogicalExpression':
        return either(child(node, 'left'), child(node, 'right'), scope);
      case 'ConditionalExpression':
        return either(child(node, 'consequent'), child(node, 'alternate'), scope);
      case 'AssignmentExpression': {
        const right = child(node, 'right');
        return node.operator === '=' && right ? kindOf(right, scope) : undefined;
      }
      case 'AwaitExpression': {
        const argument = child(node, 'argument');
        return argument ? kindOf(argument, scope) : undefined;
      }
      default:
        return undefined;
    }
  };

  const either = (a: AstNode | undefined, b: AstNode | undefined, scope: Scope): ValueKind | undefined =>
    (a ? kindOf(a, scope) : undefined) ?? (b ? kindOf(b, scope) : undefined);

  // Object.getPrototypeOf(fn) / Reflect.getPrototypeOf(fn) and Reflect.get(o, "static key").
  const callKind = (node: AstNode, scope: Scope): ValueKind | undefined => {
    const callee = child(node, 'callee');
    if (!callee) return undefined;
    const member = unwrap(callee);
    if (member.type !== 'MemberExpression') return undefined;
    const object = child(member, 'object');
    const property = child(member, 'property');
    const method = property ? staticKey(property, member.computed === true) : undefined;
    const owner = object ? kindOf(object, scope) : undefined;
    if (owner !== ValueKind.Reflect && owner !== ValueKind.ObjectCtor) return undefined;
    const args = children(node, 'arguments');
    const first = args[0] && args[0].type !== 'SpreadElement' ? kindOf(args[0], scope) : undefined;
    if (method === 'getPrototypeOf') {
      // The prototype of AsyncFunction.prototype is Function.prototype: still a function prototype.
      const fnLike =
        first === ValueKind.FunctionValue || first === ValueKind.FunctionCtor || first === ValueKind.FunctionProto;
      return fnLike ? ValueKind.FunctionProto : undefined;
    }
    if (method === 'get' && owner === ValueKind.Reflect && args[1]) {
      const key = staticKey(args[1], true);
      return key === undefined ? undefined : memberKind(first, key);
    }
    return undefined;
  };

  return {
    kindOf,
    reset: () => {
      memo = new Map();
    },
  };
}
