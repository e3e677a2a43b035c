// Writes docs/contract.schema.json from src/contract/contract.ts (run after `npm run build`).
import { writeFileSync } from 'node:fs';
import { contractJsonSchema } from '../dist/contract/contract.js';

writeFileSync(
  new URL('../docs/contract.schema.json', import.meta.url),
  JSON.stringify(contractJsonSchema(), null, 2) + '\n',
);
console.log('docs/contract.schema.json updated');
