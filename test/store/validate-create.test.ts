// validateCreate (src/store/validate.ts) builds its result as one literal (one hidden class per
// create): these pin its fields, their order, the defaults, the optional embedding, and which field
// an error names when several are bad (the fields in order, then the embedding, then the ttl).

import { describe, expect, it } from 'vitest';
import { validateCreate } from '../../src/store/validate.js';

const FIELD_ORDER = [
  'title',
  'context',
  'tags',
  'schema_name',
  'description',
  'semantic_version',
  'llm_hints',
  'visibility',
  'sensitivity',
  'ttl',
  'expiresMs',
];

describe('validateCreate', () => {
  it('applies the defaults and keeps the fields in order', () => {
    const fields = validateCreate({ title: 't', context: { a: 1 }, tags: ['x'], unknown: 1 });
    expect(Object.keys(fields)).toEqual(FIELD_ORDER);
    expect(fields).toEqual({
      title: 't',
      context: { a: 1 },
      tags: ['x'],
      schema_name: null,
      description: null,
      semantic_version: null,
      llm_hints: null,
      visibility: 'Team',
      sensitivity: 'Low',
      ttl: null,
      expiresMs: null,
    });
  });

  it('normalises the given values and adds the embedding last, only when one is given', () => {
    const fields = validateCreate({
      embedding: [0.5, 1],
      ttl: '2030-01-02T03:04:05Z',
      sensitivity: 'pii',
      visibility: 'public',
      llm_hints: { h: true },
      semantic_version: '1.0.0',
      description: 'd',
      schema_name: 's.v1',
      tags: [],
      context: {},
      title: 't',
    });
    expect(Object.keys(fields)).toEqual([...FIELD_ORDER, 'embedding']);
    expect(fields).toMatchObject({
      visibility: 'Public',
      sensitivity: 'Pii',
      llm_hints: { h: true },
      ttl: '2030-01-02T03:04:05.000Z',
      expiresMs: Date.parse('2030-01-02T03:04:05Z'),
      embedding: [0.5, 1],
    });
    expect(Object.keys(validateCreate({ title: 't', context: {}, tags: [], embedding: null }))).toEqual(FIELD_ORDER);
  });

  it('names the first bad field: the fields in order, then the embedding, then the ttl', () => {
    const base = { title: 't', context: {}, tags: [] };
    expect(() => validateCreate({ ...base, title: 1, sensitivity: 'nope' })).toThrow(/title must be a string, got/);
    expect(() => validateCreate({ ...base, sensitivity: 'nope', embedding: 'x' })).toThrow(
      /sensitivity must be one of/,
    );
    expect(() => validateCreate({ ...base, embedding: 'x', ttl: 'soon' })).toThrow(/embedding must be an array/);
    expect(() => validateCreate({ ...base, ttl: 'soon' })).toThrow(
      /ttl must be an RFC 3339 timestamp or null, got "soon"/,
    );
  });
});
