// `tools-runner deny <id> [--reason R]`: the operator's denial of one waiting approval request
// (approve.ts writes it; the requester's answer is approval.required naming the operator and reason).

import type { CommandContext } from '../command.js';
import { decide } from './approve.js';

/** Runs `tools-runner deny`. */
export function run(ctx: CommandContext): Promise<number> {
  return decide(ctx, 'deny');
}
