// How the rule walk reads each position of the tree: a read (reference), a binding (declaration
// or assignment target) or not code at all (property keys, labels, import specifiers).
//
// Getting this right is what keeps `const require = ...`, `{ eval: 1 }`, `obj.eval()` and
// `class C { constructor() {} }` from being mistaken for uses of the globals.

import { type AstNode, children } from './ast.js';

/** ref: the value is read; binding: a name is declared or assigned; skip: not an expression. */
export type Mode = 'ref' | 'binding' | 'skip';

const FUNCTION_TYPES = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);
const KEYED = new Set(['Property', 'MethodDefinition', 'PropertyDefinition', 'AccessorProperty']);
/** Destructuring patterns. */
export const PATTERNS = new Set(['ObjectPattern', 'ArrayPattern', 'AssignmentPattern', 'RestElement']);
/** Comparison operators (a comparison with a dangerous value does not use it). */
export const EQUALITY = new Set(['==', '===', '!=', '!==']);

/** Whether `parent` passes the value of `inner` through unchanged: `a ? g : h`, `g || h`, `(0, g)`, `await g`, `g as T`. */
export function isTransparent(parent: AstNode, inner: AstNode): boolean {
  switch (parent.type) {
    case 'ConditionalExpression':
      return parent.test !== inner;
    case 'LogicalExpression':
    case 'AwaitExpression':
    case 'ParenthesizedExpression':
    case 'ChainExpression':
    case 'TSAsExpression':
    case 'TSSatisfiesExpression':
    case 'TSNonNullExpression':
    case 'TSTypeAssertion':
      return true;
    case 'SequenceExpression':
      return children(parent, 'expressions').at(-1) === inner;
    default:
      return false;
  }
}

/** How the child under `key` of `node` is used: read, bound (declared / assigned to) or not code at all. */
export function childMode(node: AstNode, key: string, binding: boolean): Mode {
  const t = node.type;
  if (t === 'MemberExpression') return key === 'property' && node.computed !== true ? 'skip' : 'ref';
  if (t === 'TSQualifiedName') return key === 'right' ? 'skip' : 'ref';
  if (KEYED.has(t)) {
    if (key === 'key') return node.computed === true ? 'ref' : 'skip';
    return key === 'value' && t === 'Property' && binding ? 'binding' : 'ref';
  }
  if (FUNCTION_TYPES.has(t)) return key === 'id' ? 'skip' : key === 'params' ? 'binding' : 'ref';
  if (PATTERNS.has(t)) return t === 'AssignmentPattern' && key === 'right' ? 'ref' : 'binding';
  switch (t) {
    case 'ClassDeclaration':
    case 'ClassExpression':
    case 'TSEnumDeclaration':
    case 'TSEnumMember':
    case 'TSModuleDeclaration':
    case 'TSImportEqualsDeclaration':
      return key === 'id' ? 'skip' : 'ref';
    case 'VariableDeclarator':
      return key === 'id' ? 'binding' : 'ref';
    case 'CatchClause':
      return key === 'param' ? 'binding' : 'ref';
    case 'AssignmentExpression':
    case 'ForInStatement':
    case 'ForOfStatement':
      return key === 'left' ? 'binding' : 'ref';
    case 'TSParameterProperty':
      return 'binding';
    case 'LabeledStatement':
    case 'BreakStatement':
    case 'ContinueStatement':
      return key === 'label' ? 'skip' : 'ref';
    case 'ImportDeclaration':
    case 'ExportNamedDeclaration':
    case 'ExportAllDeclaration':
      return key === 'specifiers' || key === 'exported' ? 'skip' : 'ref';
    case 'MetaProperty':
      return 'skip';
    default:
      return 'ref';
  }
}
