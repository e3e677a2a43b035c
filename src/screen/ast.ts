// Parsing tool source with acorn (+ @sveltejs/acorn-typescript) and small helpers over the tree.
//
// Nodes are ESTree plus the TS-ESTree node types the plugin adds; we type them loosely (`AstNode`)
// because acorn's own typings know nothing of TS nodes. Type-only subtrees (annotations, interfaces,
// type aliases, generics) are never walked: they vanish at run time and `typeof eval` in a type is
// not a use of eval.

import * as acorn from 'acorn';
import { Parser, tokTypes, type Options, type TokenType } from 'acorn';
import { tsPlugin } from '@sveltejs/acorn-typescript';
import { CHILD_KEYS } from './ast-keys.js';

/** An ESTree / TS-ESTree node as produced by acorn with `locations: true`. */
export interface AstNode {
  type: string;
  start: number;
  end: number;
  loc: { start: { line: number; column: number } };
  [key: string]: unknown;
}

/**
 * acorn's `raise` computes the line and column of every error by scanning the input from the start
 * and captures a stack trace. The TypeScript plugin raises (and catches) errors constantly while it
 * tries alternative parses, which made a 50 KB tool take ~20 ms, most of it in that scan. These
 * parsers throw cheap SyntaxErrors carrying only `pos`; parseModule computes the position once.
 */
function withCheapErrors(Base: typeof Parser): typeof Parser {
  return class CheapErrors extends Base {
    raise(pos: number, message: string): never {
      const error = Object.create(SyntaxError.prototype) as SyntaxError & { pos: number };
      error.message = message;
      error.pos = pos;
      throw error;
    }
    raiseRecoverable(pos: number, message: string): never {
      return this.raise(pos, message);
    }
  };
}

interface TsInternals {
  acornTypeScript: { keywordsRegExp: RegExp; tokTypes: Record<string, TokenType> };
}
interface WordReader {
  keywords: RegExp;
  readWord1(): string;
  finishToken(type: TokenType, value: string): unknown;
}

/**
 * The TypeScript plugin's readWord builds `new RegExp(keywordsRegExp)` for every identifier token.
 * This is the same logic with the plugin's own (stateless, non-global) regex reused.
 */
function withFastWords(Base: typeof Parser): typeof Parser {
  const ts = (Base as unknown as TsInternals).acornTypeScript;
  // acorn exports keywordTypes at run time; its typings omit it.
  const keywords = (acorn as unknown as { keywordTypes: Record<string, TokenType> }).keywordTypes;
  return class FastWords extends Base {
    readWord(): unknown {
      const self = this as unknown as WordReader;
      const word = self.readWord1();
      let type = tokTypes.name;
      if (self.keywords.test(word)) type = keywords[word] as TokenType;
      else if (ts.keywordsRegExp.test(word)) type = ts.tokTypes[word] as TokenType;
      return self.finishToken(type, word);
    }
  };
}

/** The two parsers; building them once is pure (Parser.extend returns a new class, state lives per parse). */
const JS_PARSER = withCheapErrors(Parser);
const TS_PARSER = withCheapErrors(withFastWords(Parser.extend(tsPlugin())));
const OPTIONS: Options = { ecmaVersion: 'latest', sourceType: 'module', locations: true, allowHashBang: true };

/** 1-based line and column of offset `pos` (columns in UTF-16 code units, like acorn). */
function lineColumn(source: string, pos: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(Math.max(pos, 0), source.length);
  for (let i = 0; i < end; i++) {
    const c = source.charCodeAt(i);
    if (c === 10 || c === 0x2028 || c === 0x2029 || (c === 13 && source.charCodeAt(i + 1) !== 10)) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/** A syntax error with acorn's position (1-based line and column). */
export interface ParseFailure {
  message: string;
  line: number;
  column: number;
}

/** Parses a module; TypeScript syntax is accepted only for language "typescript". */
export function parseModule(source: string, language: 'typescript' | 'javascript'): AstNode | ParseFailure {
  const parser = language === 'typescript' ? TS_PARSER : JS_PARSER;
  try {
    return parser.parse(source, OPTIONS) as unknown as AstNode;
  } catch (err) {
    const e = err as { message?: unknown; pos?: unknown };
    const text = typeof e.message === 'string' ? e.message.replace(/ \(\d+:\d+\)$/, '') : String(err);
    return { message: text, ...lineColumn(source, typeof e.pos === 'number' ? e.pos : 0) };
  }
}

/** Whether `value` is an AST node. */
export function isNode(value: unknown): value is AstNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** A child node stored under `key`, or undefined when absent or not a node. */
export function child(node: AstNode, key: string): AstNode | undefined {
  const value = node[key];
  return isNode(value) ? value : undefined;
}

/** The node list stored under `key` (holes in array patterns dropped). */
export function children(node: AstNode, key: string): AstNode[] {
  const value = node[key];
  return Array.isArray(value) ? value.filter(isNode) : [];
}

/** Keys that only ever hold types (or positions), never run-time code. */
const TYPE_KEYS = new Set([
  'type',
  'start',
  'end',
  'loc',
  'range',
  'typeAnnotation',
  'returnType',
  'typeParameters',
  'typeArguments',
  'superTypeParameters',
  'superTypeArguments',
  'implements',
  'predicate',
  'extra',
]);

/** Node types that are types only; their subtrees are skipped entirely. */
export const TYPE_ONLY = new Set([
  'TSInterfaceDeclaration',
  'TSTypeAliasDeclaration',
  'TSDeclareFunction',
  'TSDeclareMethod',
  'TSIndexSignature',
  'TSTypeAnnotation',
  'TSAbstractMethodDefinition',
  'TSAbstractPropertyDefinition',
]);

/** Calls `visit(childNode, key, context)` for every run-time child of `node`, in source order. */
export function forEachChild<C>(
  node: AstNode,
  visit: (childNode: AstNode, key: string, context: C) => void,
  context: C,
): void {
  const keys = CHILD_KEYS[node.type];
  if (keys) {
    for (const key of keys) visitValue(node[key], key, visit, context);
    return;
  }
  for (const key in node) if (!TYPE_KEYS.has(key)) visitValue(node[key], key, visit, context);
}

function visitValue<C>(
  value: unknown,
  key: string,
  visit: (childNode: AstNode, key: string, context: C) => void,
  context: C,
): void {
  if (Array.isArray(value)) {
    for (const item of value) if (isNode(item) && !TYPE_ONLY.has(item.type)) visit(item, key, context);
  } else if (isNode(value) && !TYPE_ONLY.has(value.type)) {
    visit(value, key, context);
  }
}

/** Strips wrappers that do not change the value: TS assertions, `!`, parentheses, optional chains. */
export function unwrap(node: AstNode): AstNode {
  let current = node;
  for (;;) {
    switch (current.type) {
      case 'TSAsExpression':
      case 'TSSatisfiesExpression':
      case 'TSNonNullExpression':
      case 'TSTypeAssertion':
      case 'TSInstantiationExpression':
      case 'ParenthesizedExpression':
      case 'ChainExpression': {
        const inner = child(current, 'expression');
        if (!inner) return current;
        current = inner;
        break;
      }
      default:
        return current;
    }
  }
}

/**
 * The property name of a member access when it is known before run time: `a.b`, `a["b"]`,
 * `` a[`b`] `` and `a[0]` give "b"/"0"; anything computed from expressions gives undefined.
 */
export function staticKey(key: AstNode, computed: boolean): string | undefined {
  if (!computed) {
    if (key.type === 'Identifier' || key.type === 'PrivateIdentifier') return key.name as string;
    if (key.type === 'Literal') return String(key.value);
    return undefined;
  }
  const k = unwrap(key);
  if (k.type === 'Literal' && (typeof k.value === 'string' || typeof k.value === 'number')) return String(k.value);
  if (k.type === 'TemplateLiteral' && children(k, 'expressions').length === 0) {
    const quasi = children(k, 'quasis')[0];
    const cooked = (quasi?.value as { cooked?: unknown } | undefined)?.cooked;
    return typeof cooked === 'string' ? cooked : undefined;
  }
  return undefined;
}

/** 1-based line and column of a node. */
export function position(node: AstNode): { line: number; column: number } {
  return { line: node.loc.start.line, column: node.loc.start.column + 1 };
}

/** The source text of a node on one line, cut to 60 characters, for messages. */
export function snippet(source: string, node: AstNode): string {
  const text = source.slice(node.start, node.end).replace(/\s+/g, ' ');
  return text.length > 60 ? text.slice(0, 57) + '...' : text;
}
