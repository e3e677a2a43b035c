// Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by file, and inclusive
// time of our own functions (src/ in dist/), as plain text. With --calls=N also prints ms per call.
// Usage: node bench/_profile-summary.mjs <file.cpuprofile | dir> [--top=30] [--calls=1000] [--match=dist/]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const TOP = Number(opt('top', 30));
const CALLS = Number(opt('calls', 0));
const MATCH = opt('match', '/dist/');
// Only samples at least this many ms after the profile's start (skip start-up and warm-up).
const SKIP_MS = Number(opt('skip-ms', 0));
// Print the call paths (our frames only, innermost first) that lead to functions whose label contains this.
const CALLERS = opt('callers', '');
let target = args.find((a) => !a.startsWith('--'));
if (!target) {
  process.stderr.write('usage: node bench/_profile-summary.mjs <file.cpuprofile | dir> [--top=30] [--calls=N]\n');
  process.exit(2);
}
if (statSync(target).isDirectory()) {
  // the largest profile of the directory: the runner (the spawner child writes a small one)
  const files = readdirSync(target)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(target, f));
  files.sort((a, b) => statSync(b).size - statSync(a).size);
  target = files[0];
}
const profile = JSON.parse(readFileSync(target, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// self time per node from samples and timeDeltas (microseconds)
const self = new Map();
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  at += profile.timeDeltas[i] ?? 0;
  if (at < SKIP_MS * 1000) continue;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const shortUrl = (url) => {
  if (!url) return '';
  const i = url.indexOf('/node_modules/');
  if (i >= 0) return url.slice(i + 1);
  const d = url.indexOf('/dist/');
  if (d >= 0) return url.slice(d + 1);
  return url.replace(/^file:\/\//, '');
};
const label = (n) => {
  const cf = n.callFrame;
  return `${cf.functionName || '(anon)'} ${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
};
const idle = new Set(['(idle)', '(program)', '(garbage collector)']);
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
const byFn = new Map();
const paths = new Map();
const byFile = new Map();
const inclusive = new Map();
for (const [id, us] of self) {
  const n = nodes.get(id);
  add(byFn, idle.has(n.callFrame.functionName) ? n.callFrame.functionName : label(n), us);
  const url = shortUrl(n.callFrame.url);
  add(byFile, url || n.callFrame.functionName || '(native)', us);
  if (CALLERS && label(n).includes(CALLERS)) {
    const stack = [];
    for (let p = parent.get(id); p !== undefined && stack.length < 6; p = parent.get(p)) {
      const pn = nodes.get(p);
      if (pn.callFrame.url.includes(MATCH) || stack.length === 0) stack.push(label(pn));
    }
    add(paths, stack.join(' < '), us);
  }
  // inclusive: each of our functions on the stack once
  const seen = new Set();
  for (let p = id; p !== undefined; p = parent.get(p)) {
    const pn = nodes.get(p);
    if (!pn.callFrame.url.includes(MATCH)) continue;
    const key = label(pn);
    if (seen.has(key)) continue;
    seen.add(key);
    add(inclusive, key, us);
  }
}
const ms = (us) => (us / 1000).toFixed(1).padStart(8);
const perCall = (us) => (CALLS ? ` ${(us / 1000 / CALLS).toFixed(3).padStart(7)} ms/call` : '');
const pctOf = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const print = (title, map) => {
  console.log(`\n== ${title}`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`${ms(us)} ms ${pctOf(us)}${perCall(us)}  ${k}`);
};
const busy = total - (byFn.get('(idle)') ?? 0);
console.log(`profile ${target}: ${ms(total)} ms sampled, ${ms(busy)} ms not idle${perCall(busy)}`);
print('self time by function', byFn);
print('self time by file', byFile);
print(`inclusive time of functions in ${MATCH}`, inclusive);
if (CALLERS) print(`paths to ${CALLERS}`, paths);
