// JSON Schema on screen: a table of an object schema's properties, and a form generated from an
// input_schema whose value is the tool input.

import { h, json } from './dom.js';

type Schema = Record<string, unknown>;

const obj = (value: unknown): Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Schema) : {};

function typeText(schema: Schema): string {
  if (Array.isArray(schema['enum']))
    return `enum: ${(schema['enum'] as unknown[]).map((v) => JSON.stringify(v)).join(' | ')}`;
  const type = schema['type'];
  const base = Array.isArray(type)
    ? type.join(' | ')
    : typeof type === 'string'
      ? type
      : schema['$ref']
        ? String(schema['$ref'])
        : 'any';
  if (base === 'array') return `array of ${typeText(obj(schema['items']))}`;
  return base;
}

/** A table of the properties of an object schema (or the schema as JSON when it is not one). */
export function schemaTable(schema: unknown): HTMLElement {
  const s = obj(schema);
  const props = obj(s['properties']);
  const names = Object.keys(props);
  if (names.length === 0) return json(schema);
  const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : []);
  return h(
    'table',
    { class: 'grid schema' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', null, 'Field'),
        h('th', null, 'Type'),
        h('th', null, 'Required'),
        h('th', null, 'Description'),
      ),
    ),
    h(
      'tbody',
      null,
      names.map((name) => {
        const p = obj(props[name]);
        return h(
          'tr',
          null,
          h('td', null, h('code', null, name)),
          h('td', null, typeText(p)),
          h('td', null, required.has(name) ? 'yes' : ''),
          h('td', null, String(p['description'] ?? '')),
        );
      }),
    ),
  );
}

/** A form built from `schema`; `value()` returns the input or throws with a message naming the field. */
export interface SchemaForm {
  el: HTMLElement;
  value(): unknown;
}

/** Builds the form of an input_schema. */
export function schemaForm(schema: unknown, initial: unknown = {}): SchemaForm {
  const s = obj(schema);
  const props = obj(s['properties']);
  const names = Object.keys(props);
  if ((s['type'] !== undefined && s['type'] !== 'object') || names.length === 0) {
    const area = h(
      'textarea',
      { class: 'json-input', name: 'input', rows: 6, spellcheck: false },
      JSON.stringify(initial ?? {}, null, 2),
    );
    return {
      el: h('div', { class: 'form' }, h('label', null, 'Input (JSON)'), area),
      value() {
        try {
          return JSON.parse(area.value);
        } catch (error) {
          throw new Error(`input is not JSON: ${(error as Error).message}`);
        }
      },
    };
  }
  const required = new Set(Array.isArray(s['required']) ? (s['required'] as string[]) : []);
  const init = obj(initial);
  const readers: Array<(out: Schema) => void> = [];
  const rows = names.map((name) => {
    const p = obj(props[name]);
    const type = Array.isArray(p['type']) ? (p['type'] as string[])[0] : p['type'];
    const id = `f-${name}`;
    const label = h('label', { for: id }, name, required.has(name) ? h('span', { class: 'req' }, ' *') : null);
    const hint = p['description'] ? h('small', { class: 'muted' }, String(p['description'])) : null;
    let control: HTMLElement;
    const start = init[name] ?? p['default'];
    if (Array.isArray(p['enum'])) {
      const select = h(
        'select',
        { id, name },
        required.has(name) ? null : h('option', { value: '' }, '—'),
        (p['enum'] as unknown[]).map((v) =>
          h('option', { value: JSON.stringify(v), selected: JSON.stringify(v) === JSON.stringify(start) }, String(v)),
        ),
      );
      readers.push((out) => void (select.value !== '' && (out[name] = JSON.parse(select.value))));
      control = select;
    } else if (type === 'boolean') {
      const box = h('input', { id, name, type: 'checkbox', checked: start === true });
      readers.push((out) => void (out[name] = box.checked));
      control = box;
    } else if (type === 'number' || type === 'integer') {
      const input = h('input', {
        id,
        name,
        type: 'number',
        step: type === 'integer' ? '1' : 'any',
        value: start === undefined ? '' : String(start),
      });
      readers.push((out) => {
        if (input.value.trim() === '') return;
        const n = Number(input.value);
        if (!Number.isFinite(n)) throw new Error(`${name}: ${JSON.stringify(input.value)} is not a number`);
        out[name] = n;
      });
      control = input;
    } else if (type === 'string') {
      const input = h('input', { id, name, type: 'text', value: start === undefined ? '' : String(start) });
      readers.push((out) => void (input.value !== '' || required.has(name) ? (out[name] = input.value) : undefined));
      control = input;
    } else {
      const area = h(
        'textarea',
        { id, name, rows: 3, spellcheck: false },
        start === undefined ? '' : JSON.stringify(start, null, 2),
      );
      readers.push((out) => {
        if (area.value.trim() === '') return;
        try {
          out[name] = JSON.parse(area.value);
        } catch (error) {
          throw new Error(`${name}: not JSON (${(error as Error).message})`);
        }
      });
      control = area;
    }
    return h('div', { class: 'field' }, label, control, hint);
  });
  return {
    el: h('div', { class: 'form' }, rows),
    value() {
      const out: Schema = {};
      for (const read of readers) read(out);
      return out;
    },
  };
}
