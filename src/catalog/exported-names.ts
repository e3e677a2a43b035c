// The names MCP and RAP clients see belong to the operator first: which operator or host tool holds
// an exported name, and whether an agent's tool would take one (see catalog.ts, "Reserved names").

import { mangleToolName } from '../host-tools/export-openai.js';

/** An operator or host tool holding an exported name. */
export interface ExportHolder {
  name: string;
  by: 'bootstrap' | 'host';
}

/** Exported (MCP/RAP) name -> the operator or host tool holding it. */
export type ExportHolders = ReadonlyMap<string, ExportHolder>;

/** The exported names of the host tools and the pinned bootstrap tools. */
export function operatorExports(hostNames: Iterable<string>, bootstrapNames: Iterable<string>): ExportHolders {
  const out = new Map<string, ExportHolder>();
  for (const name of hostNames) out.set(mangleToolName(name), { name, by: 'host' });
  for (const name of bootstrapNames) out.set(mangleToolName(name), { name, by: 'bootstrap' });
  return out;
}

/** The operator tool whose exported name `name` would take (not the same name: that one is reserved outright). */
export function exportCollision(name: string, holders: ExportHolders): ExportHolder | undefined {
  const holder = holders.get(mangleToolName(name));
  return holder !== undefined && holder.name !== name ? holder : undefined;
}

/** The reason a colliding agent tool is not runnable (what its owner reads in rejectedTools). */
export function collisionMessage(name: string, holder: ExportHolder): string {
  return `the name "${name}" exports to MCP and RAP as "${mangleToolName(name)}", the name of the operator's ${holder.by === 'host' ? 'host tool' : 'bootstrap tool'} "${holder.name}"; clients could not tell them apart, so this tool is not runnable: choose another name`;
}
