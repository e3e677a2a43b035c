// Parsing tool source with acorn (+ @sveltejs/acorn-typescript) and small helpers over the tree.
//
// Nodes are ESTree plus the TS-ESTree node types the plugin adds; we type them loosely (`AstNode`)
// because acorn's own typings know nothing of TS nodes. Type-only subtrees (annotations, interfaces,
// type aliases, generics) are never walked: they vanish at run time and `typeof eval` in a type is
// not a use of eval.

import { Parser, type Options } from 'acorn';
import { tsPlugin } from '@sveltejs/acorn-typescript';

/** An ESTree / TS-ESTree node as produced by acorn with `locations: true`. */
export interface AstNode {
  type: string;
  start: number;
  end: number;
  loc: { start: { line: number; column: number } };
  [key: string]: unknown;
}

/** The two parsers; building them once is pure (Parser.extend returns a new class, state lives per parse). */
const JS_PARSER = Parser;
const TS_PARSER = Parser.extend(tsPlugin());
const OPTIONS: Options = { ecmaVersion: 'latest', sourceType: 'module', locations: true, allowHashBang: true };

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
    const e = err as { message?: unknown; loc?: { line: number; column: number } };
    const text = typeof e.message === 'string' ? e.message.replace(/ \(\d+:\d+\)$/, '') : String(err);
    return { message: text, line: e.loc?.line ?? 1, column: (e.loc?.column ?? 0) + 1 };
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
  'type', 'start', 'end', 'loc', 'range', 'typeAnnotation', 'returnType', 'typeParameters',
  'typeArguments', 'superTypeParameters', 'superTypeArguments', 'implements', 'predicate', 'extra',
]);

/** Node types that are types only; their subtrees are skipped entirely. */
export const TYPE_ONLY = new Set([
  'TSInterfaceDeclaration', 'TSTypeAliasDeclaration', 'TSDeclareFunction', 'TSDeclareMethod',
  'TSIndexSignature', 'TSTypeAnnotation', 'TSAbstractMethodDefinition', 'TSAbstractPropertyDefinition',
]);

/** Calls `visit(childNode, key)` for every run-time child of `node`, in source order. */
export function forEachChild(node: AstNode, visit: (childNode: AstNode, key: string) => void): void {
  for (const key in node) {
    if (TYPE_KEYS.has(key)) continue;
    const value = node[key];
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item) && !TYPE_ONLY.has(item.type)) visit(item, key);
    } else if (isNode(value) && !TYPE_ONLY.has(value.type)) {
      visit(value, key);
    }
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
