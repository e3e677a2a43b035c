// Regenerates the configuration table in docs/configuration.md from the zod schema (run after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
import { spliceConfigTable } from '../dist/config/table.js';

const path = new URL('../docs/configuration.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = spliceConfigTable(before);
if (after !== before) writeFileSync(path, after);
console.log(after === before ? 'docs/configuration.md table is current' : 'docs/configuration.md table updated');
