// One definition of unsafe characters and one literal redaction (src/text.ts), and every consumer
// agrees on them: the logger and the CLI escape, code-tool and host-tool text strips. Characters the
// sandbox used to keep (zero-width, Arabic letter mark, BOM, separators) are covered explicitly.

import { describe, expect, it } from 'vitest';
import { safeField, safeText } from '../../src/cli/sanitize.js';
import { createRedactor } from '../../src/audit/redact.js';
import { sanitizeText } from '../../src/host-tools/call-outcome.js';
import { createLogger } from '../../src/logger.js';
import { cleanToolText, redactSecrets } from '../../src/sandbox/sanitise.js';
import { escapeUnsafe, longestFirst, redactLiterals, stripUnsafe } from '../../src/text.js';

const UNSAFE = [
  '\u0000',
  '\u0007',
  '\r',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u009b',
  '\u061c',
  '\u180e',
  '\u200b',
  '\u200d',
  '\u200e',
  '\u2028',
  '\u202e',
  '\u2060',
  '\u2066',
  '\u2069',
  '\ufeff',
  '\ufff9',
];
const hex = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

describe('unsafe characters, one set', () => {
  it.each(UNSAFE.map((ch) => [hex(ch), ch]))(
    '%s is escaped by the logger and the CLI and stripped from tool text',
    (_name, ch) => {
      // (é, not a letter, follows: after 0x9B a letter would end a CSI sequence, stripped whole)
      const text = `a${ch}é`;
      expect(escapeUnsafe(text)).toBe(`a${hex(ch)}é`);
      expect(safeField(text)).toBe(`a${hex(ch)}é`);
      expect(safeText(text)).toBe(`a${hex(ch)}é`);
      const lines: string[] = [];
      createLogger({ write: (line) => lines.push(line) }).info('m', { v: text });
      // JSON lines: no raw unsafe character, and the value reads back unchanged
      const line = (lines[0] as string).replace(/\n$/, '');
      expect(escapeUnsafe(line)).toBe(line);
      expect(JSON.parse(line).v).toBe(text);
      const textLines: string[] = [];
      createLogger({ format: 'text', write: (line) => textLines.push(line) }).info('m', { v: text });
      expect(textLines[0]).toMatch(new RegExp(`v=a\\${hex(ch)}é\\n$`));
      expect(stripUnsafe(text)).toBe('aé');
      expect(cleanToolText(text, [], 1000, false)).toBe('aé');
      // host tools turn a CR (LF) into a line break first; every other unsafe character goes
      expect(sanitizeText(text)).toBe(ch === '\r' ? 'a\né' : 'aé');
    },
  );

  it('layout: tabs always stay in stripped text, newlines only in multi-line text; the CLI keeps both in blocks', () => {
    expect(stripUnsafe('a\tb\nc')).toBe('a\tbc');
    expect(stripUnsafe('a\tb\nc', true)).toBe('a\tb\nc');
    expect(safeText('a\tb\nc')).toBe('a\tb\nc');
    expect(safeField('a\tb\nc')).toBe('a\\u0009b\\u000ac');
    expect(escapeUnsafe('a\tb\nc', 'tab')).toBe('a\tb\\u000ac');
  });

  it('terminal escape sequences are stripped whole, not just their ESC', () => {
    expect(stripUnsafe('x\u001b[31mred\u001b[0m \u001b]8;;http://evil\u0007link\u001b]8;;\u0007 \u009b2Jy')).toBe(
      'xred link y',
    );
  });
});

describe('literal redaction, one implementation', () => {
  it('replaces longest first, so a secret containing another is replaced whole (logs, tool text, audit)', () => {
    const secrets = ['abcd', 'abcdefgh'];
    expect(longestFirst(['abcd', '', 'abcdefgh', 'abcd'])).toEqual(['abcdefgh', 'abcd']);
    expect(redactLiterals('x abcdefgh abcd', longestFirst(secrets), '#')).toBe('x # #');
    expect(redactSecrets('x abcdefgh abcd', secrets)).toBe('x [REDACTED] [REDACTED]');
    expect(createRedactor(secrets).text('x abcdefgh abcd')).toBe('x ***REDACTED*** ***REDACTED***');
    const lines: string[] = [];
    const logger = createLogger({ write: (line) => lines.push(line) });
    logger.redact('abcd');
    logger.redact('abcdefgh');
    logger.info('m', { v: 'x abcdefgh abcd' });
    expect(lines[0]).toContain('"v":"x [REDACTED] [REDACTED]"');
  });

  it('tool text ignores secrets under 4 characters (they would blank ordinary words)', () => {
    expect(redactSecrets('the cat', ['cat', 'the '])).toBe('[REDACTED]cat');
  });
});
