// Finding JSON Schema regular expressions that can backtrack catastrophically (ReDoS).
//
// Tool schemas are written by agents, but their `pattern`s run inside the Node service on every
// request (input validation happens before the sandbox). `^(a+)+$` takes exponential time on
// "aaaa…!" and would stall the event loop for every tool, so such schemas are refused at creation.
//
// The test: a group repeated without bound whose body contains an unbounded repetition (`+`, `*`,
// `{n,}`) is ambiguous unless every iteration is pinned by a mandatory first or last character that
// the inner repetitions cannot match. So `(a+)+`, `(\w+\s?)*`, `(a*)*` are refused while `(\.\d+)*`,
// `(\d+\.)+`, `(-[a-z]+)*` and bounded ones like `(\d{1,3}\.){3}` pass. Characters are analysed over
// ASCII; anything non-ASCII counts as "may overlap". Known gap: overlapping alternatives such as
// `(a|a)*` are not detected.

/** A set of characters: 128 ASCII flags plus "may match something beyond ASCII". */
interface CharSet {
  ascii: Uint8Array;
  other: boolean;
}

type Node = { kind: 'set'; set: CharSet } | { kind: 'group'; alts: Term[][]; zeroWidth: boolean } | { kind: 'empty' };
interface Term {
  node: Node;
  min: number;
  max: number;
}

const UNBOUNDED = 16; // a repetition allowing more than this counts as unbounded

function makeSet(test: (code: number) => boolean, other: boolean): CharSet {
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) ascii[c] = test(c) ? 1 : 0;
  return { ascii, other };
}
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isWord = (c: number): boolean => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
const ANY = (): CharSet => makeSet(() => true, true);
const literal = (code: number): CharSet => (code < 128 ? makeSet((c) => c === code, false) : makeSet(() => false, true));

function union(a: CharSet, b: CharSet): CharSet {
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) ascii[c] = (a.ascii[c] ?? 0) | (b.ascii[c] ?? 0);
  return { ascii, other: a.other || b.other };
}
function disjoint(a: CharSet, b: CharSet): boolean {
  if (a.other && b.other) return false;
  for (let c = 0; c < 128; c++) if (a.ascii[c] && b.ascii[c]) return false;
  return true;
}
const EMPTY_SET = (): CharSet => makeSet(() => false, false);

/** The set of an escape like \d, \W, \n, \. ; `i` points after the backslash. */
function escapeSet(p: string, i: number): { set: CharSet; next: number } {
  const e = p[i] ?? '';
  const classes: Record<string, (c: number) => boolean> = { d: isDigit, w: isWord, s: isSpace };
  const lower = e.toLowerCase();
  if (lower in classes) {
    const test = classes[lower] as (c: number) => boolean;
    return { set: e === lower ? makeSet(test, lower === 's') : makeSet((c) => !test(c), true), next: i + 1 };
  }
  const controls: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, '0': 0 };
  if (e in controls) return { set: literal(controls[e] as number), next: i + 1 };
  if (e === 'x' && /^[0-9a-f]{2}/i.test(p.slice(i + 1))) return { set: literal(parseInt(p.slice(i + 1, i + 3), 16)), next: i + 3 };
  if (e === 'u' && /^[0-9a-f]{4}/i.test(p.slice(i + 1))) return { set: literal(parseInt(p.slice(i + 1, i + 5), 16)), next: i + 5 };
  if (e === 'u' && p[i + 1] === '{') return { set: ANY(), next: p.indexOf('}', i) + 1 || p.length };
  if ((e === 'p' || e === 'P') && p[i + 1] === '{') return { set: ANY(), next: p.indexOf('}', i) + 1 || p.length };
  if (/[1-9k]/.test(e)) return { set: ANY(), next: e === 'k' ? p.indexOf('>', i) + 1 || p.length : i + 1 }; // back-reference
  return { set: literal(e.codePointAt(0) ?? 0), next: i + (e.length || 1) };
}

function classSet(p: string, i: number): { set: CharSet; next: number } {
  let j = i + 1;
  const negate = p[j] === '^';
  if (negate) j++;
  let set = EMPTY_SET();
  let first = true;
  while (j < p.length && (p[j] !== ']' || first)) {
    first = false;
    let item: CharSet;
    let code: number | undefined;
    if (p[j] === '\\') {
      const esc = escapeSet(p, j + 1);
      item = esc.set;
      j = esc.next;
      const single = [...item.ascii].filter((x) => x).length === 1 && !item.other;
      code = single ? item.ascii.indexOf(1) : undefined;
    } else {
      code = p.codePointAt(j) ?? 0;
      item = literal(code);
      j += code > 0xffff ? 2 : 1;
    }
    if (code !== undefined && p[j] === '-' && p[j + 1] !== ']' && j + 1 < p.length) {
      const hiChar = p[j + 1] === '\\' ? escapeSet(p, j + 2) : undefined;
      const hi = hiChar ? hiChar.set.ascii.indexOf(1) : (p.codePointAt(j + 1) ?? 0);
      const lo = code;
      item = makeSet((c) => c >= lo && c <= hi, hi >= 128 || hi < 0);
      j = hiChar ? hiChar.next : j + 2;
    }
    set = union(set, item);
  }
  if (negate) set = { ascii: set.ascii.map((x) => (x ? 0 : 1)), other: true };
  return { set, next: j + 1 };
}

/** Parses alternatives until `)` or the end; returns them and the index after. */
function parseAlts(p: string, start: number): { alts: Term[][]; next: number } {
  const alts: Term[][] = [[]];
  let i = start;
  while (i < p.length && p[i] !== ')') {
    const c = p[i] as string;
    if (c === '|') {
      alts.push([]);
      i++;
      continue;
    }
    let node: Node;
    if (c === '\\') {
      const isZeroWidth = p[i + 1] === 'b' || p[i + 1] === 'B';
      const esc = escapeSet(p, i + 1);
      node = isZeroWidth ? { kind: 'empty' } : { kind: 'set', set: esc.set };
      i = esc.next;
    } else if (c === '[') {
      const cls = classSet(p, i);
      node = { kind: 'set', set: cls.set };
      i = cls.next;
    } else if (c === '(') {
      let j = i + 1;
      let zeroWidth = false;
      if (p[j] === '?') {
        const look = /^\?(<?[=!])/.exec(p.slice(j));
        zeroWidth = look !== null;
        j = look ? j + look[0].length : p[j + 1] === '<' ? p.indexOf('>', j) + 1 || p.length : j + 2;
      }
      const inner = parseAlts(p, j);
      node = { kind: 'group', alts: inner.alts, zeroWidth };
      i = inner.next + 1;
    } else if (c === '^' || c === '$') {
      node = { kind: 'empty' };
      i++;
    } else {
      const code = p.codePointAt(i) ?? 0;
      node = { kind: 'set', set: c === '.' ? ANY() : literal(code) };
      i += code > 0xffff ? 2 : 1;
    }
    const q = /^(?:([*+?])|\{(\d+)(?:(,)(\d*))?\})\??/.exec(p.slice(i));
    let min = 1;
    let max = 1;
    if (q) {
      if (q[1]) [min, max] = q[1] === '*' ? [0, Infinity] : q[1] === '+' ? [1, Infinity] : [0, 1];
      else [min, max] = [Number(q[2]), q[3] === undefined ? Number(q[2]) : q[4] === '' ? Infinity : Number(q[4])];
      i += q[0].length;
    }
    (alts[alts.length - 1] as Term[]).push({ node, min, max });
  }
  return { alts, next: i };
}

const nullable = (t: Term): boolean => t.min === 0 || t.node.kind === 'empty' || (t.node.kind === 'group' && (t.node.zeroWidth || t.node.alts.some((seq) => seq.every(nullable))));

/** Characters that can start a match of the sequence. */
function seqFirst(seq: Term[]): CharSet {
  let set = EMPTY_SET();
  for (const t of seq) {
    set = union(set, groupFirst(t.node));
    if (!nullable(t)) break;
  }
  return set;
}

/** Characters that can start a match of a node (a set, or any alternative of a group). */
function groupFirst(node: Node): CharSet {
  if (node.kind !== 'group' || node.zeroWidth) return node.kind === 'set' ? node.set : EMPTY_SET();
  return node.alts.reduce((acc, alt) => union(acc, seqFirst(alt)), EMPTY_SET());
}

/**
 * Inside one iteration of a repeated group: does a variable-length term (x+, x*, x?, x{m,n}) compete
 * with what follows it for the same characters? `after` is what may follow the sequence.
 */
function competes(seq: Term[], after: CharSet): boolean {
  let follow = after;
  for (let k = seq.length - 1; k >= 0; k--) {
    const t = seq[k] as Term;
    const first = groupFirst(t.node);
    if (t.min < t.max && !disjoint(first, follow)) return true;
    if (t.node.kind === 'group' && !t.node.zeroWidth) {
      const inner = t.max > 1 ? union(follow, first) : follow;
      if (t.node.alts.some((alt) => competes(alt, inner))) return true;
    }
    follow = nullable(t) ? union(first, follow) : first;
  }
  return false;
}

function ambiguous(alts: Term[][]): boolean {
  for (const t of alts.flat()) {
    if (t.node.kind !== 'group') continue;
    if (t.max > UNBOUNDED && !t.node.zeroWidth) {
      const next = groupFirst(t.node);
      if (t.node.alts.some((alt) => competes(alt, next))) return true;
    }
    if (ambiguous(t.node.alts)) return true;
  }
  return false;
}

/** Whether `pattern` can backtrack catastrophically: an unbounded repetition of an ambiguous group. */
export function isCatastrophicPattern(pattern: string): boolean {
  return ambiguous(parseAlts(pattern, 0).alts);
}
