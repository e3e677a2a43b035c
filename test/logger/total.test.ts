// The logger cannot throw and cannot loop: every hostile value in every field, in both formats, gives
// exactly one bounded, well-formed line; a sink that fails (throws, or a real pipe whose reader went
// away: EPIPE) is dropped and its lines counted, never an uncaught error; the uncaught-error guard
// (src/service/uncaught-guard.ts) cannot recurse through a logger and logs a storm only boundedly.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger, guardedWriter, MAX_LINE_CHARS, type LogFormat } from '../../src/logger.js';
import { createUncaughtGuard } from '../../src/service/uncaught-guard.js';
import { escapeUnsafe } from '../../src/text.js';

function cyclic(): unknown {
  const a: Record<string, unknown> = { name: 'a' };
  a['self'] = a;
  a['list'] = [a, { back: a }];
  return a;
}

function deep(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = { next: value };
  return value;
}

const throwingGetter = Object.defineProperty({}, 'boom', {
  enumerable: true,
  get: () => {
    throw new Error('getter threw');
  },
});
const throwingToJSON = {
  toJSON: () => {
    throw new Error('toJSON threw');
  },
};
const selfToJSON: { toJSON(): unknown } = { toJSON: () => selfToJSON };
const hostileProxy = new Proxy(
  {},
  {
    ownKeys: () => {
      throw new Error('ownKeys trap');
    },
    get: () => {
      throw new Error('get trap');
    },
    getPrototypeOf: () => {
      throw new Error('getPrototypeOf trap');
    },
  },
);
const lyingProxy = new Proxy(
  { a: 1 },
  {
    get: () => {
      throw new Error('every read throws');
    },
  },
);
const revoked = Proxy.revocable({}, {});
revoked.revoke();
const errorWithHostileParts = Object.defineProperty(new Error('base'), 'message', {
  get: () => {
    throw new Error('message getter');
  },
});
class Weird extends Error {
  override get name(): string {
    throw new Error('name getter');
  }
}
const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1, ['__proto__']: 'x' });
const symbolToString = Object.assign(Symbol('s'), {});

/** Values no log line may choke on. */
const HOSTILE: Array<[string, unknown]> = [
  ['undefined', undefined],
  ['null', null],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['BigInt', 12345678901234567890n],
  ['Symbol', Symbol('secret-ish')],
  ['a Symbol with properties', symbolToString],
  ['a function', function named() {}],
  ['an arrow function', () => 1],
  ['a cyclic object', cyclic()],
  ['10 000 levels deep', deep(10_000)],
  ['a 20 MB string', 'x'.repeat(20 * 1024 * 1024)],
  ['a 1 000 000 item array', new Array(1_000_000).fill(7)],
  ['an object with 100 000 keys', Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))],
  ['a Buffer', Buffer.alloc(1 << 20, 0xff)],
  ['a Uint8Array', new Uint8Array(64)],
  ['an ArrayBuffer', new ArrayBuffer(32)],
  ['binary in a string', '\u0000\u001b[31m\u0007\u009b\ud800 lone surrogate \udfff'],
  ['a getter that throws', throwingGetter],
  ['toJSON that throws', throwingToJSON],
  ['toJSON that returns itself', selfToJSON],
  ['a Proxy whose traps throw', hostileProxy],
  ['a Proxy whose reads throw', lyingProxy],
  ['a revoked Proxy', revoked.proxy],
  ['an Error whose message getter throws', errorWithHostileParts],
  ['an Error subclass whose name getter throws', new Weird('w')],
  ['a null-prototype object with __proto__', nullProto],
  [
    'a Map',
    new Map<unknown, unknown>([
      [{ k: 1 }, cyclic()],
      ['b', 2n],
    ]),
  ],
  ['a Set', new Set([1, Symbol('x'), cyclic()])],
  ['a Date', new Date(0)],
  ['an invalid Date', new Date(Number.NaN)],
  ['a Promise', Promise.resolve(1)],
  ['a WeakMap', new WeakMap()],
  ['a RegExp', /x+/g],
  ['a boxed string', Object('boxed')],
];

const FORMATS: LogFormat[] = ['json', 'text'];

/** Every place a value can enter a line: the message, a meta field, the meta object itself, bindings, nesting. */
const PLACES: Array<[string, (value: unknown, lines: string[], format: LogFormat) => void]> = [
  ['msg', (value, lines, format) => createLogger({ format, write: (l) => lines.push(l) }).info(value as string)],
  [
    'a meta field',
    (value, lines, format) => createLogger({ format, write: (l) => lines.push(l) }).info('m', { v: value }),
  ],
  [
    'the meta object',
    (value, lines, format) =>
      createLogger({ format, write: (l) => lines.push(l) }).warn('m', value as Record<string, unknown>),
  ],
  [
    'a child binding',
    (value, lines, format) =>
      createLogger({ format, write: (l) => lines.push(l) })
        .child({ b: value })
        .error('m', { ok: 1 }),
  ],
  [
    'the bindings object',
    (value, lines, format) =>
      createLogger({ format, write: (l) => lines.push(l) })
        .child(value as Record<string, unknown>)
        .info('m'),
  ],
  [
    'root bindings',
    (value, lines, format) => createLogger({ format, write: (l) => lines.push(l), bindings: { r: value } }).info('m'),
  ],
  [
    'a nested field',
    (value, lines, format) =>
      createLogger({ format, write: (l) => lines.push(l) }).info('m', { a: [{ b: value }], time: value, level: value }),
  ],
];

describe('the logger never throws, whatever it is given', () => {
  for (const format of FORMATS) {
    for (const [place, log] of PLACES) {
      it.each(HOSTILE)(`${format}, in ${place}: %s`, (_what, value) => {
        const lines: string[] = [];
        expect(() => log(value, lines, format)).not.toThrow();
        expect(lines).toHaveLength(1);
        const line = lines[0] as string;
        expect(line.endsWith('\n')).toBe(true);
        expect(line.slice(0, -1)).not.toContain('\n');
        // no raw control, C1 or bidi character reaches the sink
        expect(escapeUnsafe(line.slice(0, -1))).toBe(line.slice(0, -1));
        // bounded: the data budget, each character at worst JSON-escaped (\u0000 is 6)
        expect(line.length).toBeLessThan(MAX_LINE_CHARS * 6 + 4096);
        if (format === 'json') {
          const parsed = JSON.parse(line) as Record<string, unknown>;
          // the fixed fields cannot be overwritten by data
          expect(parsed['level']).toMatch(/^(info|warn|error)$/);
          expect(typeof parsed['time']).toBe('string');
          expect(typeof parsed['msg']).toBe('string');
        } else {
          expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (INFO |WARN |ERROR) /);
        }
      });
    }
  }

  it('redact() ignores values that are not strings', () => {
    const logger = createLogger({ write: () => undefined });
    for (const [, value] of HOSTILE) expect(() => logger.redact(value as string)).not.toThrow();
  });

  it('a huge string is cut, with the cut marked, and a secret near the cut is still redacted whole', () => {
    const lines: string[] = [];
    const logger = createLogger({ write: (l) => lines.push(l) });
    const secret = 'sk-live-0123456789abcdef';
    logger.redact(secret);
    logger.info('m', { v: 'a'.repeat(16_380) + secret + 'b'.repeat(100) });
    const parsed = JSON.parse(lines[0] as string) as { v: string };
    expect(parsed.v).toMatch(/…\[\d+ chars cut\]$/);
    expect(lines[0]).not.toContain('sk-live');
    expect(lines[0]).not.toContain('sk-l');
  });

  it('data cannot overwrite time, level or msg: they keep their value and the data a prefixed name', () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).info('real', { level: 'error', msg: 'forged', time: 'then' });
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 'info',
      msg: 'real',
      _level: 'error',
      _msg: 'forged',
      _time: 'then',
    });
  });
});

describe('a failing sink', () => {
  it('one that throws loses that line, counted; the logger goes on', () => {
    let calls = 0;
    const logger = createLogger({
      write: () => {
        calls += 1;
        throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
      },
    });
    expect(() => {
      for (let i = 0; i < 5; i++) logger.error('m', { i });
    }).not.toThrow();
    expect(calls).toBe(5);
    expect(logger.droppedLines()).toBe(5);
    expect(logger.child({ c: 1 }).droppedLines()).toBe(5);
  });

  it('a real pipe whose reader went away (EPIPE) is dropped and counted, never an uncaught error', async () => {
    const reader = spawn(process.execPath, ['-e', ''], { stdio: ['pipe', 'ignore', 'ignore'] });
    await once(reader, 'exit');
    const stream = reader.stdin;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const logger = createLogger({ stream });
      // The first write fails asynchronously (an 'error' event); the writer must have its listener.
      for (let i = 0; i < 3; i++) logger.info('to nowhere', { i });
      await new Promise<void>((resolve) => {
        const check = (): void => (guardedWriter(stream).broken() ? resolve() : void setTimeout(check, 20));
        check();
      });
      for (let i = 0; i < 10; i++) logger.error('still to nowhere', { i });
      expect(guardedWriter(stream).broken()).toBe(true);
      // the line whose write failed and every later one
      expect(logger.droppedLines()).toBeGreaterThanOrEqual(11);
      await new Promise((r) => setImmediate(r));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});

describe('the uncaught-error guard', () => {
  it('an error raised while it logs one (a sink that reports its failure as a new uncaught error) is counted, not logged again', () => {
    let counted = 0;
    let writes = 0;
    let guard: ReturnType<typeof createUncaughtGuard>;
    const logger = createLogger({
      write: () => {
        writes += 1;
        // what an EPIPE on stderr did: the write's failure became the next uncaught error
        guard.handle(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
        throw new Error('EPIPE');
      },
    });
    guard = createUncaughtGuard({ logger, count: () => void (counted += 1) });
    expect(() => guard.handle(new Error('first'))).not.toThrow();
    expect(writes).toBe(1);
    expect(counted).toBe(2);
  });

  it('a storm of errors is counted in full and logged boundedly; the next window says how many went unlogged', () => {
    let now = 0;
    let counted = 0;
    const lines: string[] = [];
    const guard = createUncaughtGuard({
      logger: createLogger({ write: (l) => lines.push(l) }),
      count: () => void (counted += 1),
      now: () => now,
    });
    for (let i = 0; i < 10_000; i++) guard.handle(new Error(`e${i}`));
    expect(counted).toBe(10_000);
    expect(lines).toHaveLength(10);
    now += 10_000;
    guard.handle(new Error('later'));
    expect(lines).toHaveLength(12);
    expect(JSON.parse(lines[10] as string)).toMatchObject({
      level: 'error',
      msg: 'uncaught errors not logged (too many)',
      count: 9_990,
    });
    expect(JSON.parse(lines[11] as string)).toMatchObject({
      msg: 'uncaught error; the service keeps serving',
      error: { message: 'later' },
    });
  });

  it('hostile error values and a throwing counter do not make it throw', () => {
    const guard = createUncaughtGuard({
      logger: createLogger({ format: 'text', write: () => undefined }),
      count: () => {
        throw new Error('count');
      },
    });
    for (const [, value] of HOSTILE) expect(() => guard.handle(value)).not.toThrow();
  });
});
