// RAP `displayScript`: a human-readable line for a tool call, e.g.
// `"PR #" + args.number + " on " + args.owner + "/" + args.repo` -> `PR #42 on acme/widgets`.
//
// The seed's scripts are Rhai; we evaluate only the simple subset every example uses — string
// literals, `args.key` and `+` (parentheses allowed) — and never run anything: the script is parsed
// with acorn and the tree is interpreted node by node, any other node type giving up. `+` follows
// Rhai: number + number adds, anything + string concatenates. Object and array arguments are passed
// in as JSON strings. A missing argument, an unsupported node, a non-string result, a parse error or
// an over-long script all fall back to the default display `name(args)`; failures are never errors.

import { parse, type Node } from 'acorn';

/** Longest script evaluated, and longest display line produced. */
export const MAX_SCRIPT_LENGTH = 2000;
export const MAX_DISPLAY_LENGTH = 500;

type Value = string | number | boolean;

class Unsupported extends Error {}

function argValue(args: Record<string, unknown>, key: string): Value {
  if (!Object.hasOwn(args, key)) throw new Unsupported(`args.${key} is missing`);
  const value = args[key];
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value === null || value === undefined) throw new Unsupported(`args.${key} is unit`);
  return JSON.stringify(value);
}

function evaluate(node: Node, args: Record<string, unknown>, depth: number): Value {
  if (depth > 200) throw new Unsupported('too deep');
  const n = node as Node & Record<string, unknown>;
  switch (node.type) {
    case 'Literal':
      if (typeof n['value'] !== 'string') throw new Unsupported('only string literals');
      return n['value'];
    case 'MemberExpression': {
      const object = n['object'] as Node & { name?: string };
      const property = n['property'] as Node & { name?: string };
      if (
        n['computed'] ||
        n['optional'] ||
        object.type !== 'Identifier' ||
        object.name !== 'args' ||
        property.type !== 'Identifier'
      ) {
        throw new Unsupported('only args.key');
      }
      return argValue(args, property.name as string);
    }
    case 'BinaryExpression': {
      if (n['operator'] !== '+') throw new Unsupported('only +');
      const left = evaluate(n['left'] as Node, args, depth + 1);
      const right = evaluate(n['right'] as Node, args, depth + 1);
      if (typeof left === 'number' && typeof right === 'number') return left + right;
      if (typeof left === 'string' || typeof right === 'string') return String(left) + String(right);
      throw new Unsupported('cannot add these values');
    }
    default:
      throw new Unsupported(`node ${node.type}`);
  }
}

/** The default display of a call: `name({"a":1})`, capped. */
export function defaultDisplay(name: string, args: unknown): string {
  let text: string;
  try {
    text = `${name}(${JSON.stringify(args ?? {}) ?? ''})`;
  } catch {
    text = `${name}(…)`;
  }
  return text.length > MAX_DISPLAY_LENGTH ? text.slice(0, MAX_DISPLAY_LENGTH - 1) + '…' : text;
}

/** Evaluates the simple subset of a display script; undefined when it cannot (use the default then). */
export function evaluateDisplayScript(script: string, args: unknown): string | undefined {
  if (script.length > MAX_SCRIPT_LENGTH || typeof args !== 'object' || args === null || Array.isArray(args))
    return undefined;
  try {
    const program = parse(script, { ecmaVersion: 2022, sourceType: 'script' }) as Node & {
      body: Array<Node & { expression?: Node }>;
    };
    const [statement, ...rest] = program.body;
    if (!statement || rest.length > 0 || statement.type !== 'ExpressionStatement' || !statement.expression)
      return undefined;
    const value = evaluate(statement.expression, args as Record<string, unknown>, 0);
    if (typeof value !== 'string') return undefined;
    return value.length > MAX_DISPLAY_LENGTH ? value.slice(0, MAX_DISPLAY_LENGTH - 1) + '…' : value;
  } catch {
    // SyntaxError, Unsupported, RangeError: all mean "use the default display".
    return undefined;
  }
}

/** What a frontend shows for a call: the script's string, else `name(args)`. Never throws. */
export function renderDisplay(name: string, script: string | undefined, args: unknown): string {
  return (script === undefined ? undefined : evaluateDisplayScript(script, args)) ?? defaultDisplay(name, args);
}
