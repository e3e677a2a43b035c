// A small reader of this project's Dockerfile (stages and their instructions) and of the compose
// example's services, for test/install/dockerfile.test.ts: no Docker engine runs on the test machine.

/** One instruction: `RUN npm ci` -> { op: 'RUN', args: 'npm ci' }. */
export interface Instruction {
  op: string;
  args: string;
}

export interface Stage {
  /** `FROM image AS name`: the name, or the index for an unnamed stage. */
  name: string;
  from: string;
  steps: Instruction[];
}

/** The stages of a Dockerfile, continuation lines joined and comments dropped. */
export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw)) continue;
    const line = raw.trimEnd();
    if (line.endsWith('\\')) {
      current += line.slice(0, -1) + ' ';
      continue;
    }
    current += line;
    if (current.trim() !== '') logical.push(current.trim().replace(/\s+/g, ' '));
    current = '';
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const [op = '', ...rest] = line.split(' ');
    const args = rest.join(' ');
    if (op.toUpperCase() === 'FROM') {
      const match = /^(\S+)(?: AS (\S+))?$/i.exec(args);
      if (!match) throw new Error(`Dockerfile: cannot read FROM ${args}`);
      stages.push({ name: match[2] ?? String(stages.length), from: match[1] as string, steps: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: ${op} before FROM`);
    stage.steps.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

/** `ENV A=1 B=2` -> { A: '1', B: '2' } (the key=value form this Dockerfile uses). */
export function envOf(instruction: Instruction): Record<string, string> {
  return Object.fromEntries(
    instruction.args.split(' ').map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) throw new Error(`ENV without key=value: ${instruction.args}`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
}

/** `COPY [--from=stage] src... dest` -> its parts. */
export function copyOf(instruction: Instruction): { from?: string; sources: string[]; dest: string } {
  const parts = instruction.args.split(' ');
  const from = parts[0]?.startsWith('--from=') ? (parts.shift() as string).slice('--from='.length) : undefined;
  const dest = parts.pop() as string;
  return { ...(from ? { from } : {}), sources: parts, dest };
}

/** The services of a compose file and their lines (by indentation: 2 spaces under `services:`). */
export function composeServices(text: string): Map<string, string> {
  const services = new Map<string, string>();
  let inServices = false;
  let name: string | undefined;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line)) {
      inServices = line.startsWith('services:');
      name = undefined;
      continue;
    }
    if (!inServices) continue;
    const top = /^ {2}([a-z0-9-]+):\s*$/.exec(line);
    if (top) {
      name = top[1] as string;
      services.set(name, '');
    } else if (name && !/^\s*#/.test(line)) {
      services.set(name, `${services.get(name) ?? ''}${line}\n`);
    }
  }
  return services;
}
