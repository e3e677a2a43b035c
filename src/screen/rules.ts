// The AST rules of source screening: one walk over the module with lexical scopes.
//
// Each finding carries a stable code (IssueCode), a message naming what was found (the source text
// of the offending expression) and its 1-based line:column. A node is reported once per code. The
// walk tracks whether an identifier is read (a reference) or bound (a declaration, a pattern target)
// so that `const require = ...`, `{ eval: 1 }` and `obj.eval()` are not mistaken for the globals.

import { type AstNode, child, children, forEachChild, position, snippet, staticKey, unwrap } from './ast.js';
import { childMode, EQUALITY, isTransparent, PATTERNS } from './walk-modes.js';
import { createClassifier, globalKind, ValueKind, memberKind } from './classify.js';
import { denoApiPermissions, type DenoPermission } from './deno-apis.js';
import { buildScopes, resolve, resolveAliases, type Scope } from './scope.js';
import { IssueCode, type Issue, type ScreenPermissions } from './types.js';

/** Runs every AST rule over a parsed module; `permissions` decide which Deno.* APIs are fine. */
export function runRules(program: AstNode, source: string, permissions: ScreenPermissions): Issue[] {
  const info = buildScopes(program);
  const classifier = createClassifier();
  resolveAliases(info, classifier.kindOf, classifier.reset);
  const kindOf = classifier.kindOf;
  const issues: Issue[] = [];
  const seen = new Set<string>();
  const stack: AstNode[] = [];

  const report = (code: IssueCode, node: AstNode, message: string): void => {
    const key = `${code}@${node.start}`;
    if (seen.has(key)) return;
    seen.add(key);
    issues.push({ code, path: '/code/source', message, ...position(node) });
  };
  const granted = (p: DenoPermission): boolean =>
    p === 'net'
      ? permissions.net.length > 0 || permissions.extraPermissions.includes('net')
      : permissions.extraPermissions.includes(p);

  const text = (node: AstNode): string => snippet(source, quotedNode(node, stack));

  // A Function constructor that is only compared, type-checked or whose .prototype is read is harmless.
  const benignFunctionUse = (key: string, scope: Scope): boolean => {
    const parent = stack.at(-1);
    if (!parent) return false;
    if (parent.type === 'BinaryExpression')
      return (parent.operator === 'instanceof' && key === 'right') || EQUALITY.has(parent.operator as string);
    if (parent.type === 'UnaryExpression') return parent.operator === 'typeof';
    if (
      (parent.type === 'MemberExpression' && key === 'object') ||
      (parent.type === 'TSQualifiedName' && key === 'left')
    ) {
      const outer = kindOf(parent, scope);
      return outer === ValueKind.FunctionCtor || outer === ValueKind.FunctionProto;
    }
    return false;
  };

  const checkDenoApi = (name: string, node: AstNode): void => {
    const missing = denoApiPermissions(name).filter((p) => !granted(p));
    if (missing.length === 0) return;
    const list = missing.map((p) => `"${p}"`).join(' and ');
    report(
      IssueCode.DenoPermission,
      node,
      `Deno.${name} needs the ${list} permission${missing.length > 1 ? 's' : ''}, which this tool does not have`,
    );
  };

  const checkValueKind = (kind: ValueKind | undefined, node: AstNode, key: string, scope: Scope): void => {
    if (kind === ValueKind.Eval) report(IssueCode.Eval, node, `eval is not allowed: ${text(node)}`);
    else if (kind === ValueKind.Require)
      report(IssueCode.Require, node, `require is not available; tools must be self-contained: ${text(node)}`);
    else if (kind === ValueKind.FunctionCtor && !benignFunctionUse(key, scope)) {
      report(IssueCode.FunctionConstructor, node, `The Function constructor is not allowed: ${text(node)}`);
    }
  };

  // A global object (or Deno) may be used through its properties, compared, or aliased by a plain
  // name (tracked); anything else (an argument, an array element, a return value, a Proxy target)
  // would hide later computed access from the rules above, so it is refused.
  const checkEscape = (node: AstNode): void => {
    let inner = node;
    let depth = stack.length - 1;
    let parent = stack[depth];
    while (parent && isTransparent(parent, inner)) {
      inner = parent;
      parent = stack[--depth];
    }
    if (!parent || allowedUse(parent, inner, scope0(depth), kindOf)) return;
    report(
      IssueCode.ComputedGlobal,
      node,
      `A global object may only be used through its properties: ${snippet(source, parent)}`,
    );
  };
  const scopes: Scope[] = [];
  const scope0 = (depth: number): Scope => scopes[depth] ?? info.root;
  const checkIdentifier = (node: AstNode, key: string, scope: Scope): void => {
    const name = node.name as string;
    const binding = resolve(name, scope);
    if (binding) {
      if (binding.alias === ValueKind.Global || binding.alias === ValueKind.Deno) checkEscape(node);
      return;
    }
    const kind = globalKind(name);
    if (kind === ValueKind.Global || kind === ValueKind.Deno) checkEscape(node);
    if (kind === ValueKind.Require && stack.at(-1)?.type === 'UnaryExpression' && stack.at(-1)?.operator === 'typeof')
      return;
    checkValueKind(kind, node, key, scope);
  };

  const checkMember = (node: AstNode, key: string, scope: Scope): void => {
    const qualified = node.type === 'TSQualifiedName';
    const object = child(node, qualified ? 'left' : 'object');
    const property = child(node, qualified ? 'right' : 'property');
    if (!object || !property) return;
    const objectKind = kindOf(object, scope);
    const name = staticKey(property, !qualified && node.computed === true);
    if ((objectKind === ValueKind.Global || objectKind === ValueKind.Deno) && name === undefined) {
      report(
        IssueCode.ComputedGlobal,
        node,
        `Computed access to a global object is not allowed: ${snippet(source, node)}`,
      );
      return;
    }
    if (objectKind === ValueKind.Deno && name !== undefined) checkDenoApi(name, node);
    const kind = kindOf(node, scope);
    if (kind === ValueKind.Global || kind === ValueKind.Deno) checkEscape(node);
    checkValueKind(kind, node, key, scope);
  };

  // Reflect.get(globalThis, k), Object.getOwnPropertyDescriptor(window, k), Object.values(globalThis) ...
  const checkReflective = (node: AstNode, scope: Scope): void => {
    const callee = child(node, 'callee');
    const member = callee ? unwrap(callee) : undefined;
    if (member?.type !== 'MemberExpression') return;
    const owner = kindOf(child(member, 'object') as AstNode, scope);
    if (owner !== ValueKind.Reflect && owner !== ValueKind.ObjectCtor) return;
    const args = children(node, 'arguments').filter((arg) => arg.type !== 'SpreadElement');
    if (
      args.some((arg) => {
        const k = kindOf(arg, scope);
        return k === ValueKind.Global || k === ValueKind.Deno;
      })
    ) {
      report(
        IssueCode.ComputedGlobal,
        node,
        `Reflective access to a global object is not allowed: ${snippet(source, node)}`,
      );
    }
  };

  // const { eval: e } = globalThis; const { readTextFile } = Deno; const { constructor: F } = async () => {};
  const checkPattern = (pattern: AstNode, sourceKind: ValueKind | undefined, at: AstNode): void => {
    if (sourceKind === ValueKind.Global) {
      report(IssueCode.ComputedGlobal, pattern, `Destructuring a global object is not allowed: ${snippet(source, at)}`);
      return;
    }
    if (pattern.type === 'AssignmentPattern') {
      const left = child(pattern, 'left');
      if (left) checkPattern(left, sourceKind, at);
      return;
    }
    if (pattern.type !== 'ObjectPattern' || sourceKind === undefined) return;
    for (const prop of children(pattern, 'properties')) {
      const keyNode = child(prop, 'key');
      const name = prop.type === 'RestElement' || !keyNode ? undefined : staticKey(keyNode, prop.computed === true);
      if (name === undefined) {
        if (sourceKind === ValueKind.Deno)
          report(
            IssueCode.ComputedGlobal,
            prop,
            `Computed or rest destructuring of Deno is not allowed: ${snippet(source, at)}`,
          );
        continue;
      }
      if (sourceKind === ValueKind.Deno) checkDenoApi(name, prop);
      const kind = memberKind(sourceKind, name);
      if (kind === ValueKind.FunctionCtor)
        report(IssueCode.FunctionConstructor, prop, `The Function constructor is not allowed: ${snippet(source, at)}`);
      if (kind === ValueKind.Require)
        report(
          IssueCode.Require,
          prop,
          `require is not available; tools must be self-contained: ${snippet(source, at)}`,
        );
      const value = child(prop, 'value');
      if (value && PATTERNS.has(value.type)) checkPattern(value, kind, at);
    }
  };

  const checkImport = (node: AstNode): void => {
    const from = child(node, 'source') ?? child(child(node, 'moduleReference') ?? node, 'expression');
    const spec = from ? JSON.stringify(from.value) : '(unknown)';
    const what =
      node.type === 'ExportAllDeclaration' || node.type === 'ExportNamedDeclaration' ? 'Re-export from' : 'Import of';
    report(IssueCode.StaticImport, node, `${what} ${spec} is not allowed; tools must be self-contained`);
  };

  const check = (node: AstNode, key: string, scope: Scope, binding: boolean): void => {
    switch (node.type) {
      case 'Identifier':
        if (!binding) checkIdentifier(node, key, scope);
        return;
      case 'MemberExpression':
      case 'TSQualifiedName':
        checkMember(node, key, scope);
        return;
      case 'CallExpression':
        checkReflective(node, scope);
        return;
      case 'ImportExpression':
        report(IssueCode.DynamicImport, node, `Dynamic import is not allowed: ${snippet(source, node)}`);
        return;
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
        checkImport(node);
        return;
      case 'ExportNamedDeclaration':
        if (node.source) checkImport(node);
        return;
      case 'TSImportEqualsDeclaration':
        if (child(node, 'moduleReference')?.type === 'TSExternalModuleReference') checkImport(node);
        return;
      case 'VariableDeclarator':
      case 'AssignmentExpression':
      case 'AssignmentPattern': {
        const target = child(node, node.type === 'VariableDeclarator' ? 'id' : 'left');
        const value = child(node, node.type === 'VariableDeclarator' ? 'init' : 'right');
        if (target && value && PATTERNS.has(target.type)) checkPattern(target, kindOf(value, scope), node);
        return;
      }
    }
  };

  // The walk keeps parallel stacks (ancestors, their scopes, their binding mode) instead of
  // allocating a closure per node: the callback below is created once.
  const bindings: boolean[] = [];
  const visit = (node: AstNode, key: string, scope: Scope, binding: boolean): void => {
    const inner = info.scopeOf.get(node) ?? scope;
    check(node, key, inner, binding);
    stack.push(node);
    scopes.push(inner);
    bindings.push(binding);
    forEachChild(node, visitChild, undefined);
    stack.pop();
    scopes.pop();
    bindings.pop();
  };
  const visitChild = (c: AstNode, childKey: string): void => {
    const top = stack.length - 1;
    const mode = childMode(stack[top] as AstNode, childKey, bindings[top] as boolean);
    if (mode !== 'skip') visit(c, childKey, scopes[top] as Scope, mode === 'binding');
  };
  visit(program, 'program', info.root, false);
  return issues;
}

type KindOf = ReturnType<typeof createClassifier>['kindOf'];

/** The expression to quote for a node (`stack`: its ancestors): the whole call when the node is what is called. */
function quotedNode(node: AstNode, stack: readonly AstNode[]): AstNode {
  const parent = stack.at(-1);
  const grand = stack.at(-2);
  const isCallee = (call: AstNode | undefined, callee: AstNode): boolean =>
    (call?.type === 'CallExpression' || call?.type === 'NewExpression') && call.callee === callee;
  if (isCallee(parent, node)) return parent as AstNode;
  if (
    parent?.type === 'SequenceExpression' &&
    children(parent, 'expressions').at(-1) === node &&
    isCallee(grand, parent)
  )
    return grand as AstNode;
  return node;
}

/** Whether the use of a dangerous value `inner` under `parent` is one the rules let through (a read, a test, an alias). */
function allowedUse(parent: AstNode, inner: AstNode, scope: Scope, kindOf: KindOf): boolean {
  switch (parent.type) {
    case 'MemberExpression':
      return parent.object === inner;
    case 'TSQualifiedName':
      return parent.left === inner;
    case 'VariableDeclarator':
    case 'AssignmentPattern':
    case 'ExpressionStatement':
      return true; // aliases are tracked; destructuring is reported by checkPattern
    case 'AssignmentExpression': {
      const target = child(parent, 'left');
      return parent.left === inner || (target !== undefined && unwrap(target).type !== 'MemberExpression');
    }
    case 'ConditionalExpression':
      return parent.test === inner;
    case 'BinaryExpression':
      return EQUALITY.has(parent.operator as string) || parent.operator === 'instanceof' || parent.operator === 'in';
    case 'UnaryExpression':
      return parent.operator === 'typeof' || parent.operator === '!' || parent.operator === 'void';
    case 'IfStatement':
    case 'WhileStatement':
    case 'DoWhileStatement':
    case 'ForStatement':
      return parent.test === inner;
    case 'CallExpression': {
      const callee = child(parent, 'callee');
      const member = callee ? unwrap(callee) : undefined;
      if (member?.type !== 'MemberExpression') return false;
      const owner = kindOf(child(member, 'object') as AstNode, scope);
      return owner === ValueKind.Reflect || owner === ValueKind.ObjectCtor; // reported by checkReflective
    }
    default:
      return false;
  }
}
