// Runs the benchmarks (`npm run bench [-- name ...]`): each bench/<name>.mjs prints one JSON object.
// Benchmarks import the compiled code from dist/, so `npm run bench` builds first.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const all = readdirSync(dir)
  .filter((file) => file.endsWith('.mjs') && file !== 'run-all.mjs' && !file.startsWith('_'))
  .map((file) => file.slice(0, -4))
  .sort();
const wanted = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
const extra = process.argv.slice(2).filter((arg) => arg.startsWith('-'));
const names = wanted.length > 0 ? wanted : all;
let failed = 0;
for (const name of names) {
  if (!all.includes(name)) {
    console.error(`unknown benchmark "${name}" (known: ${all.join(', ')})`);
    failed++;
    continue;
  }
  console.error(`# bench/${name}`);
  const run = spawnSync(process.execPath, [`${dir}/${name}.mjs`, ...extra], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
