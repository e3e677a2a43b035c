// Terminal safety of CLI output (issue 9: agent text reaching the operator's terminal raw): the
// escaping functions, the tail line renderer and the logger's JSON and text formats, with the attack
// variants — ESC/CSI sequences, OSC 8 hyperlinks, CR overwrite, bidi overrides, C1 CSI (0x9B).

import { describe, expect, it } from 'vitest';
import { renderLiveMessage } from '../../src/cli/commands/tail.js';
import { safeField, safeJson, safeText } from '../../src/cli/sanitize.js';
import { createLogger } from '../../src/logger.js';

// Characters a terminal acts on: C0 (but tab/newline in text blocks), DEL, C1, bidi and separators.
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;

const VARIANTS: Array<[string, string, string]> = [
  ['ESC CSI colour', '\u001b[31mred\u001b[0m', '\\u001b[31mred\\u001b[0m'],
  ['ESC clear screen + cursor home', '\u001b[2J\u001b[Hfake prompt', '\\u001b[2J\\u001b[Hfake prompt'],
  [
    'OSC 8 hyperlink (BEL)',
    '\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007',
    '\\u001b]8;;https://evil.example/\\u0007click\\u001b]8;;\\u0007',
  ],
  ['OSC 8 hyperlink (ST)', '\u001b]8;;https://evil.example/\u001b\\x', '\\u001b]8;;https://evil.example/\\u001b\\x'],
  ['OSC title set', '\u001b]0;owned\u0007', '\\u001b]0;owned\\u0007'],
  ['CR overwrite', 'calculator\rsafe-tool', 'calculator\\u000dsafe-tool'],
  ['backspace overwrite', 'evil\b\b\b\bgood', 'evil\\u0008\\u0008\\u0008\\u0008good'],
  ['U+202E right-to-left override', 'invoice\u202Efdp.exe', 'invoice\\u202efdp.exe'],
  ['bidi isolate U+2066..2069', '\u2066a\u2069', '\\u2066a\\u2069'],
  ['C1 CSI 0x9B', '\u009b31mred', '\\u009b31mred'],
  ['C1 OSC 0x9D + ST 0x9C', '\u009d8;;x\u009c', '\\u009d8;;x\\u009c'],
  ['NEL 0x85 and line separator', 'a\u0085b\u2028c', 'a\\u0085b\\u2028c'],
  ['DEL', 'a\u007fb', 'a\\u007fb'],
];

describe('safeField / safeText / safeJson', () => {
  it.each(VARIANTS)('%s: escaped as \\uXXXX in a field', (_name, hostile, shown) => {
    expect(safeField(hostile)).toBe(shown);
    expect(safeField(hostile)).not.toMatch(RAW);
  });

  it('a field escapes newlines and tabs too (no fake second line); a text block keeps them', () => {
    expect(safeField('a\nfinish calculator success\tx')).toBe('a\\u000afinish calculator success\\u0009x');
    expect(safeText('line 1\n\tline 2\u001b[31m')).toBe('line 1\n\tline 2\\u001b[31m');
  });

  it.each(VARIANTS)('%s: JSON output stays valid JSON with the same data', (_name, hostile) => {
    const value = { tool: hostile, nested: [hostile, { [hostile]: hostile }] };
    const text = safeJson(value, 2);
    expect(text).not.toMatch(RAW);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('leaves ordinary text alone, including non-Latin scripts and emoji', () => {
    const text = 'Grüße — 東京 — שלום — 🚀 — calculator 2 + 3 * 4';
    expect(safeField(text)).toBe(text);
    expect(JSON.parse(safeJson({ text }))).toEqual({ text });
  });
});

describe('tail lines', () => {
  it.each(VARIANTS)('%s in tool, rid, status and code: printed escaped on one line', (_name, hostile) => {
    const line = renderLiveMessage(
      JSON.stringify({
        type: 'execution:finished',
        ts: '2026-01-01T00:00:00.000Z',
        tool: hostile,
        rid: hostile,
        status: hostile,
        code: hostile,
        durationMs: 3.25,
      }),
    );
    expect(line).not.toMatch(RAW);
    expect(line).not.toContain('\n');
    expect(line).toBe(
      `2026-01-01T00:00:00.000Z finish ${safeField(hostile)} ${safeField(hostile)} ${safeField(hostile)} 3.3ms rid=${safeField(hostile)}`,
    );
  });

  it.each(VARIANTS)('%s in a RAP display line: printed escaped after the finish line', (_name, hostile) => {
    const line = renderLiveMessage(
      JSON.stringify({
        type: 'execution:finished',
        ts: 't',
        tool: 'get_pr',
        rid: 'r',
        status: 'success',
        durationMs: 1,
        display: `PR #42 ${hostile}`,
      }),
    );
    expect(line).not.toMatch(RAW);
    expect(line).toBe(`t finish get_pr success 1.0ms rid=r — ${safeField(`PR #42 ${hostile}`)}`);
  });

  it('an unknown message type or a non-JSON frame is escaped too', () => {
    expect(renderLiveMessage('\u001b[2Jnot json')).toBe('\\u001b[2Jnot json');
    expect(renderLiveMessage(JSON.stringify({ type: '\u009b2J', ts: 't', tool: 'x', rid: 'r' }))).toBe(
      't \\u009b2J x rid=r',
    );
    expect(renderLiveMessage('[1,2]')).toBe('[1,2]');
  });
});

describe('logger formats', () => {
  const capture = (format: 'json' | 'text'): { lines: string[]; log: ReturnType<typeof createLogger> } => {
    const lines: string[] = [];
    return { lines, log: createLogger({ level: 'debug', format, write: (line) => void lines.push(line) }) };
  };

  it.each(VARIANTS)(
    '%s: JSON log lines carry no raw terminal control and parse back to the same data',
    (_name, hostile) => {
      const { lines, log } = capture('json');
      log.info('tool loaded', { name: hostile });
      expect(lines[0]).not.toMatch(RAW);
      expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 'info', msg: 'tool loaded', name: hostile });
    },
  );

  it.each(VARIANTS)('%s: text log lines escape it', (_name, hostile, shown) => {
    const { lines, log } = capture('text');
    log.warn('tool loaded', { name: hostile });
    expect(lines[0]).not.toMatch(RAW);
    expect(lines[0]).toContain(shown);
  });

  it('text lines read as time, level, message and key=value pairs; secrets are still redacted', () => {
    const { lines, log } = capture('text');
    log.redact('s3cr3t-value');
    log.child({ component: 'store' }).info('store listening', {
      url: 'http://127.0.0.1:8081',
      count: 3,
      ok: true,
      note: 'two words',
      token: 's3cr3t-value',
    });
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO  store listening component=store url=http:\/\/127\.0\.0\.1:8081 count=3 ok=true note="two words" token=\[REDACTED\]\n$/,
    );
  });
});
