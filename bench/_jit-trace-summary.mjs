// Summarises V8's --trace-opt / --trace-deopt lines of a runner's stdout copied by bench/e2e.mjs
// (--runner-stdout=PREFIX, with its "### <ms> <phase>" lines): per phase of the bench, how many
// functions TurboFan compiled, how long the compile jobs took (V8's own figure: wall time of the jobs
// on its worker threads) and how many deopts happened; then, for the phase named by --phase (default:
// the c16 run, "calls at"), the compiled functions and every deopt with its reason. Counts do not
// depend on the machine's load; the milliseconds do.
// Usage: node bench/_jit-trace-summary.mjs <PREFIX.n> [--phase="calls at"] [--top=40]
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const file = args.find((a) => !a.startsWith('--'));
if (!file) {
  process.stderr.write('usage: node bench/_jit-trace-summary.mjs <runner stdout copy> [--phase=TEXT] [--top=N]\n');
  process.exit(2);
}
const PHASE = opt('phase', 'calls at');
const TOP = Number(opt('top', 40));

const phases = [{ name: 'start-up', calls: 0, opt: 0, deopt: 0, compileMs: 0 }];
const compiled = new Map();
const deopts = new Map();
const add = (map, key, ms = 0) => {
  const e = map.get(key) ?? { n: 0, ms: 0 };
  e.n++;
  e.ms += ms;
  map.set(key, e);
};
const COMPILED = /^\[completed compiling 0x\w+ <JSFunction (\S*?) ?\(sfi[^>]*>.*took [\d.]+, ([\d.]+), [\d.]+ ms/;
const BAILOUT =
  /^\[bailout \(kind: ([^,]+), reason: (.*)\): begin\. deoptimizing 0x\w+ <JSFunction (\S*?) ?\(sfi.*bytecode offset (\d+)/;
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (line.startsWith('### ')) {
    const text = line.split(' ').slice(2).join(' ');
    phases.push({ name: text, calls: Number(/(\d+) calls/.exec(text)?.[1] ?? 0), opt: 0, deopt: 0, compileMs: 0 });
    continue;
  }
  const phase = phases.at(-1);
  const inPhase = phase.name.includes(PHASE);
  let m;
  if ((m = COMPILED.exec(line))) {
    phase.opt++;
    phase.compileMs += Number(m[2]);
    if (inPhase) add(compiled, m[1] || '(anonymous)', Number(m[2]));
  } else if ((m = BAILOUT.exec(line))) {
    phase.deopt++;
    if (inPhase) add(deopts, `${m[3] || '(anonymous)'} (${m[1]}: ${m[2]}, bytecode offset ${m[4]})`);
  }
}

const r = (x) => Math.round(x * 10) / 10;
console.log('phase | optimised | compile ms | deopts | per 1,000 calls (optimised, deopts)');
for (const p of phases)
  console.log(
    `${p.name} | ${p.opt} | ${r(p.compileMs)} | ${p.deopt}${p.calls ? ` | ${r((p.opt * 1000) / p.calls)}, ${r((p.deopt * 1000) / p.calls)}` : ''}`,
  );
const top = (map) => [...map].sort((a, b) => b[1].ms - a[1].ms || b[1].n - a[1].n).slice(0, TOP);
console.log(
  `\ncompiled in the phase "${PHASE}" (times, compile ms, function; V8 names anonymous functions by sfi only):`,
);
for (const [name, e] of top(compiled)) console.log(`${e.n} ${r(e.ms)} ${name}`);
console.log(`\ndeopts in the phase "${PHASE}":`);
for (const [what, e] of top(deopts)) console.log(`${e.n} ${what}`);
