// How soon V8 optimises the service's code (src/cli/v8-tiering.ts): `start` and `store` lower V8's
// interrupt budget once they serve, unless Node was given its own. Checked in real Node processes: a
// function run a fixed number of times is optimised with the service's budget and not with V8's
// default (counted in bytecode run, not in time; recompilation made synchronous so it is exact).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { INTERRUPT_BUDGET, tieringFlags } from '../../src/cli/v8-tiering.js';

const tieringModule = fileURLToPath(new URL('../../dist/cli/v8-tiering.js', import.meta.url));

// A function of some hundred bytes of bytecode with a loop, run 60 times: several ticks of the
// service's budget (optimised), under the ticks V8's default budget needs.
const probe = `
  function work(n) {
    let s = 0;
    for (let i = 0; i < n; i++) s += (i * 31) % 7;
    const o = { a: s, b: String(s), c: [s, s + 1] };
    return o.a + o.b.length + o.c[1];
  }
  for (let i = 0; i < 60; i++) work(40);
  // V8's status bits: 1 << 4 is "TurboFanned"
  console.log((%GetOptimizationStatus(work) & (1 << 4)) !== 0 ? 'optimised' : 'not optimised');
`;

function run(nodeFlags: string[], applyService: boolean): string {
  // the probe is compiled by `new Function` after the flags are set (its natives syntax too)
  const apply = applyService
    ? `const { applyTieringFlags } = await import(${JSON.stringify(tieringModule)}); applyTieringFlags(process.execArgv);`
    : '';
  return execFileSync(
    process.execPath,
    [
      '--allow-natives-syntax',
      '--no-concurrent-recompilation',
      ...nodeFlags,
      '--input-type=module',
      '-e',
      `${apply} new Function(${JSON.stringify(probe)})();`,
    ],
    { encoding: 'utf8' },
  ).trim();
}

describe('V8 tiering flags', () => {
  it('sets a budget of a sixteenth of the default budget of V8 11.3 unless Node was given one', () => {
    expect(INTERRUPT_BUDGET).toBe(67_584 / 16);
    expect(tieringFlags([])).toEqual([`--interrupt-budget=${INTERRUPT_BUDGET}`]);
    expect(tieringFlags(['--max-old-space-size=512'])).toEqual([`--interrupt-budget=${INTERRUPT_BUDGET}`]);
    expect(tieringFlags(['--interrupt-budget=67584'])).toEqual([]);
    expect(tieringFlags(['--interrupt_budget=1000'])).toEqual([]);
    expect(tieringFlags(['--interrupt-budget-for-feedback-allocation=940'])).toEqual([
      `--interrupt-budget=${INTERRUPT_BUDGET}`,
    ]);
  });

  // the counts below are V8 11's (Node 20); later V8s tier up on other counts (Maglev first)
  it.runIf(process.versions.v8.startsWith('11.'))(
    'optimises a function sooner in a real Node process, and leaves a budget given to Node alone',
    () => {
      expect(run([], false)).toBe('not optimised');
      expect(run([], true)).toBe('optimised');
      expect(run(['--interrupt-budget=67584'], true)).toBe('not optimised');
    },
  );

  it('is applied by `start` and `store` once they serve, not during start-up', () => {
    for (const command of ['start', 'store']) {
      const text = readFileSync(
        fileURLToPath(new URL(`../../dist/cli/commands/${command}.js`, import.meta.url)),
        'utf8',
      );
      const ready = command === 'start' ? text.indexOf('await startService(') : text.indexOf('out(`store listening on');
      expect(ready).toBeGreaterThan(-1);
      expect(text.indexOf('applyTieringFlags()')).toBeGreaterThan(ready);
    }
  });
});
