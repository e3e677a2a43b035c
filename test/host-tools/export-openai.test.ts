// OpenAI export (contracts.md §2.1 shape, §5.3 rule 1): mangled names, reverse map, collisions.

import { describe, expect, it } from 'vitest';
import { RunnerError } from '../../src/errors.js';
import { exportOpenAI, mangleToolName } from '../../src/host-tools/index.js';

describe('mangleToolName', () => {
  it.each([
    ['mail.smtp_send', 'mail.smtp_send'.replace('.', '_')],
    ['get_time', 'get_time'],
    ['a-b_C9', 'a-b_C9'],
    ['runloop/mail send', 'runloop_mail_send'],
    ['émoji😀', '_moji_'],
    ['x'.repeat(80), 'x'.repeat(64)],
  ])('%s -> %s', (name, expected) => {
    expect(mangleToolName(name)).toBe(expected);
    expect(mangleToolName(name)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});

describe('exportOpenAI', () => {
  it('exports the OpenAI shape, omits empty descriptions and maps names back', () => {
    const schema = { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] };
    const out = exportOpenAI([
      { name: 'mail.smtp_send', description: 'Send mail', inputSchema: null },
      { name: 'get_time', description: '', inputSchema: schema },
    ]);
    expect(out.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'mail_smtp_send',
          description: 'Send mail',
          parameters: { type: 'object', additionalProperties: false },
        },
      },
      { type: 'function', function: { name: 'get_time', parameters: schema } },
    ]);
    expect(out.tools[1]?.function.parameters).toBe(schema);
    expect(out.reverse).toEqual({ mail_smtp_send: 'mail.smtp_send', get_time: 'get_time' });
  });

  it('a collision after mangling fails the export naming both sources', () => {
    let caught: unknown;
    try {
      exportOpenAI([
        { name: 'mail.send', inputSchema: null },
        { name: 'mail_send', inputSchema: null },
      ]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RunnerError);
    expect(caught).toMatchObject({
      code: 'conflict',
      message: 'tool names "mail.send" and "mail_send" both export as "mail_send"',
      retryable: false,
    });
  });

  it('names equal after the 64-character cap collide too; an empty name cannot be exported', () => {
    const long = 'a'.repeat(64);
    expect(() =>
      exportOpenAI([
        { name: `${long}-one`, inputSchema: {} },
        { name: `${long}-two`, inputSchema: {} },
      ]),
    ).toThrow(`tool names "${long}-one" and "${long}-two" both export as "${long}"`);
    expect(() => exportOpenAI([{ name: '', inputSchema: {} }])).toThrow('tool name "" cannot be exported: it is empty');
  });
});
