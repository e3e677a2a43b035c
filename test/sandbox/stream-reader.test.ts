// The host's parser of sandbox output (pure functions): frames vs log text, byte accounting, size
// limits, and the sanitising of untrusted text.

import { describe, expect, it } from 'vitest';
import { cleanToolText, createLogCollector, cutUtf8, redactSecrets, stripControl } from '../../src/sandbox/sanitise.js';
import { createStreamReader, type StreamEvents } from '../../src/sandbox/stream-reader.js';

const NONCE = '0123456789abcdef0123456789abcdef';

function reader(options: { maxFrameBytes?: number; maxLogLineBytes?: number; hello?: boolean } = {}) {
  const seen = {
    hello: [] as string[],
    badHello: [] as string[],
    frames: [] as unknown[],
    tooLarge: [] as string[],
    bad: [] as string[],
    logs: [] as Array<[string, boolean]>,
    output: 0,
  };
  let nonce = '';
  const events: StreamEvents = {
    // the host knows its process's nonce; frames count from the hello on
    hello: () => {
      nonce = NONCE;
      seen.hello.push('hello');
    },
    badHello: (line) => seen.badHello.push(line),
    frame: (type, seq, payload, bytes) => seen.frames.push([type, seq, payload, bytes]),
    frameTooLarge: (type) => seen.tooLarge.push(type),
    badFrame: (line) => seen.bad.push(line),
    log: (text, cut) => seen.logs.push([text, cut]),
    output: (bytes) => (seen.output += bytes),
  };
  const r = createStreamReader({
    expectHello: options.hello ?? true,
    nonce: () => nonce,
    maxFrameBytes: options.maxFrameBytes ?? 1000,
    maxLogLineBytes: options.maxLogLineBytes ?? 100,
    events,
  });
  return { r, seen, setNonce: (n: string) => (nonce = n) };
}

describe('createStreamReader', () => {
  it('reads the hello, then splits frames from log lines across arbitrary chunk boundaries', () => {
    const { r, seen } = reader();
    const text = `TRH2\nhello log\n\n${NONCE}R7 {"a":"é"}\npartial`;
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 3) r.push(bytes.subarray(i, i + 3));
    r.end();
    expect(seen.hello).toEqual(['hello']);
    expect(seen.frames).toEqual([['R', 7, '{"a":"é"}', Buffer.byteLength('{"a":"é"}')]]);
    expect(seen.logs).toEqual([
      ['hello log', false],
      ['partial', false],
    ]);
    expect(seen.output).toBe('hello log\n'.length + 1 + 'partial'.length);
  });

  it('a first line that is not a hello is reported', () => {
    const { r, seen } = reader();
    r.push(Buffer.from('Warning: something\n'));
    expect(seen.badHello).toEqual(['Warning: something']);
    // the first protocol's hello carried a nonce the harness drew itself: not this harness
    const old = reader();
    old.r.push(Buffer.from(`TRH1 ${NONCE}\n${NONCE}R1 {}\n`));
    expect(old.seen.hello).toEqual([]);
    expect(old.seen.badHello).toEqual([`TRH1 ${NONCE}`]);
    const flood = reader();
    flood.r.push(Buffer.alloc(500, 65));
    expect(flood.seen.badHello).toHaveLength(1);
  });

  it('lines that only resemble frames (wrong nonce, short) are log text', () => {
    const { r, seen } = reader();
    r.push(Buffer.from(`TRH2\n${'f'.repeat(32)}R1 {"forged":1}\nR1 {}\n${NONCE.slice(0, 10)}\n`));
    expect(seen.frames).toEqual([]);
    expect(seen.logs.map(([text]) => text)).toEqual([`${'f'.repeat(32)}R1 {"forged":1}`, 'R1 {}', NONCE.slice(0, 10)]);
  });

  it('an oversized frame is reported once with its type, and the stream recovers', () => {
    const { r, seen } = reader({ maxFrameBytes: 64 });
    r.push(Buffer.from(`TRH2\n${NONCE}R1 "${'x'.repeat(100)}`));
    r.push(Buffer.from(`${'x'.repeat(100)}"\nafter\n`));
    expect(seen.tooLarge).toEqual(['R']);
    expect(seen.frames).toEqual([]);
    expect(seen.logs).toEqual([['after', false]]);
  });

  it('a frame without "<type><seq> " is malformed', () => {
    const { r, seen } = reader();
    r.push(Buffer.from(`TRH2\n${NONCE}garbage\n`));
    expect(seen.bad).toEqual(['garbage']);
  });

  it('a long log line is handed over cut, the rest only counted (a flood without newlines)', () => {
    const { r, seen } = reader({ maxLogLineBytes: 10 });
    r.push(Buffer.from(`TRH2\n`));
    for (let i = 0; i < 100; i++) r.push(Buffer.alloc(1000, 66));
    expect(seen.logs).toEqual([['BBBBBBBBBB', true]]);
    expect(seen.output).toBe(100_000);
  });

  it('stderr (no hello) is log text until the nonce is known, then recognises sync frames', () => {
    const { r, seen, setNonce } = reader({ hello: false });
    r.push(Buffer.from('early\n'));
    setNonce(NONCE);
    r.push(Buffer.from(`late\n\n${NONCE}S3 \n`));
    expect(seen.logs).toEqual([
      ['early', false],
      ['late', false],
    ]);
    expect(seen.frames).toEqual([['S', 3, '', 0]]);
  });
});

describe('sanitising', () => {
  it('strips ANSI/OSC escapes, control and bidi characters', () => {
    expect(stripControl('\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok\x07\x00\r \u202eevil\u2066 tab\there')).toBe(
      'red ok evil tab\there',
    );
    expect(stripControl('a\nb\x1bc', true)).toBe('a\nbc');
    expect(stripControl('a\nb')).toBe('ab');
  });

  it('cleans tool stacks: data: URL -> tool.ts, harness/runtime frames dropped', () => {
    const stack = [
      'Error: boom',
      '    at execute (data:application/typescript;base64,ZXhwb3J0......fQ==:4:9)',
      '    at runJob (file:///srv/sandbox/harness.ts:186:25)',
      '    at listOnTimeout (ext:core/02_timers.js:307:17)',
      '    at async Promise.all (index 0)',
    ].join('\n');
    expect(cleanToolText(stack, [], 10_000, true)).toBe(
      'Error: boom\n    at execute (tool.ts:4:9)\n    at async Promise.all (index 0)',
    );
    expect(
      cleanToolText('Requires read access\n    at data:application/typescript;base64,QUJD:1:15', [], 10_000, false),
    ).toBe('Requires read access at tool.ts:1:15');
  });

  it('redacts secrets of 4+ characters and cuts on UTF-8 boundaries', () => {
    expect(redactSecrets('key=abcd1234 and abcd1234, short=xyz', ['abcd1234', 'xyz'])).toBe(
      'key=[REDACTED] and [REDACTED], short=xyz',
    );
    expect(cutUtf8('aé€', 4)).toBe('aé');
    expect(cutUtf8('aé€', 3)).toBe('aé');
    expect(cutUtf8('aé€', 2)).toBe('a');
    expect(cutUtf8('aé€', 6)).toBe('aé€');
    expect(cutUtf8('😀x', 3)).toBe('');
  });

  it('the log collector keeps whole lines up to the cap, then cuts and marks truncated', () => {
    const logs = createLogCollector(10, ['s3cr3t']);
    logs.add('12345');
    logs.add('   ');
    logs.add('s3cr3t!');
    logs.add('more');
    expect(logs.lines).toEqual(['12345', '[REDA']);
    expect(logs.truncated).toBe(true);
  });
});
