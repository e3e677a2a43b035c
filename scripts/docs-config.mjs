// Regenerates the configuration table in README.md from the zod schema (run after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
import { spliceConfigTable } from '../dist/config/table.js';

const path = new URL('../README.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = spliceConfigTable(before);
if (after !== before) writeFileSync(path, after);
console.log(after === before ? 'README config table is current' : 'README config table updated');
