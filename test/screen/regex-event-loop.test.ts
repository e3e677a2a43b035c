// No agent-controlled schema or input blocks the event loop: hostile inputs against classic
// catastrophic patterns (and RE2's own worst cases, and ajv-formats on megabyte strings) are
// validated one per macrotask, as the service does per request, while perf_hooks measures the delay.

import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import {
  createSchemaValidator,
  DEFAULT_REGEX_BUDGET,
  PER_CHARACTER_STEPS,
  checkSchemaPattern,
  validateSchemas,
} from '../../src/screen/index.js';
import { EVIL } from './evil-patterns.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
let seed = 11;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const randomAb = (n: number) => Array.from({ length: n }, () => (random() < 0.5 ? 'a' : 'b')).join('');

/** RE2's slow cases: a lazy DFA that must build a new state per character, large counted repetitions. */
const RE2_WORST = [
  '[ab]*a[ab]{20}$',
  '[ab]*a[ab]{60}$',
  '(?:[ab]*a[ab]{15}){4}$',
  '\\p{L}{0,300}\\p{N}',
  '[a-z]{0,500}[0-9]',
  '\\w{0,900}\\d',
  '(?:a|aa){0,200}$',
];
const FORMATS = [
  'email',
  'uri',
  'uri-reference',
  'uri-template',
  'url',
  'hostname',
  'ipv6',
  'date-time',
  'duration',
  'regex',
  'byte',
  'relative-json-pointer',
];

describe('event-loop delay while hostile inputs are validated', () => {
  it('stays bounded: every validation within its work budget, no blocking call near a second of CPU', async () => {
    const validator = createSchemaValidator();
    const patterns = [...EVIL.map(([pattern]) => pattern), ...RE2_WORST];
    const hostile = (pattern: string): string[] => {
      const check = checkSchemaPattern(pattern);
      if (!check.ok) throw new Error(check.reason);
      const fits = Math.floor(DEFAULT_REGEX_BUDGET / (check.programSize + PER_CHARACTER_STEPS)) - 2;
      const own = EVIL.find(([p]) => p === pattern)?.[1] ?? 'a'.repeat(18);
      return [own, own.repeat(50), 'a'.repeat(fits), randomAb(fits), randomAb(fits - 1) + '!', 'a'.repeat(1_000_000)];
    };
    // warm-up (JIT, first compiles), as a running service would be
    for (const pattern of patterns) validator.validate({ type: 'string', pattern }, 'warm');

    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    let refusedForBudget = 0;
    // CPU time of each blocking call too: unlike the delay histogram it does not count the time the
    // machine gave to other processes
    const slowest: Array<[number, string]> = [];
    const timed = <T>(what: string, fn: () => T): T => {
      const started = process.cpuUsage();
      try {
        return fn();
      } finally {
        const used = process.cpuUsage(started);
        slowest.push([(used.user + used.system) / 1000, what]);
      }
    };
    for (const pattern of patterns) {
      const schema = { type: 'string', pattern };
      for (const input of hostile(pattern)) {
        await tick();
        const result = timed(`${pattern} x ${input.length}`, () => validator.validate(schema, input));
        if (result.errors[0]?.message.includes('regex work budget')) refusedForBudget++;
        await tick();
        timed(`key ${pattern} x ${input.length}`, () =>
          validator.validate(
            { type: 'object', patternProperties: { [pattern]: { type: 'integer' } } },
            { [input.slice(0, 100_000)]: 'x' },
          ),
        );
        await tick();
        timed(`items ${pattern} x ${input.length}`, () =>
          validator.validate({ type: 'array', items: schema }, Array(2000).fill(input.slice(0, 64))),
        );
      }
      await tick();
      timed(`definition ${pattern}`, () =>
        validateSchemas(
          {
            input_schema: { type: 'object', properties: { s: { ...schema, description: 's' } } },
            output_schema: { type: 'object' },
            examples: [{ input: { s: 'a'.repeat(5000) } }],
          },
          { validator },
        ),
      );
    }
    const megabyte = [
      'a'.repeat(1_000_000),
      'a.'.repeat(500_000),
      'a@'.repeat(500_000) + '!',
      '1:'.repeat(500_000),
      'http://' + 'a'.repeat(1_000_000) + '!',
      '{'.repeat(1_000_000),
    ];
    for (const format of FORMATS) {
      for (const input of megabyte) {
        await tick();
        timed(`format ${format} x ${input.length}`, () => validator.validate({ type: 'string', format }, input));
      }
    }
    await tick();
    histogram.disable();
    const maxMs = histogram.max / 1e6;
    if (process.env['PRINT_FIGURES'])
      process.stdout.write(
        `event-loop delay: max ${maxMs.toFixed(1)} ms, p99 ${(histogram.percentile(99) / 1e6).toFixed(1)} ms, budget refusals ${refusedForBudget}, load ${loadavg()[0]?.toFixed(1)}\n`,
      );
    if (process.env['PRINT_FIGURES'])
      process.stdout.write(
        slowest
          .sort((x, y) => y[0] - x[0])
          .slice(0, 8)
          .map(([ms, what]) => `  ${ms.toFixed(1)} ms CPU ${what}`)
          .join('\n') + '\n',
      );
    expect(refusedForBudget).toBeGreaterThanOrEqual(patterns.length); // every 1 MB string at least
    // The work of one validation is bounded in steps (the budget, refused above); its CPU time varies
    // with the machine (~40 ms idle, ~100 ms on a loaded 2-core VM), so the bound here is one no
    // bounded validation comes near and an unbounded one (catastrophic backtracking: seconds to
    // forever on these inputs) always crosses. The wall-clock histogram includes time the OS gave
    // other processes: it is printed (PRINT_FIGURES=1) and bounded only as loosely.
    expect(slowest.map(([ms]) => ms).filter((ms) => ms >= 1_000)).toEqual([]);
    expect(maxMs).toBeLessThan(10_000);
  });
});
