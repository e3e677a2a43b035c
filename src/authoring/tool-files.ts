// Reads tool JSON files (bootstrap-breadcrumbs/ and `tools-runner test` arguments) into the
// breadcrumb each should become. Accepts the upstream bootstrap shape (top-level schema_name, title,
// description, semantic_version, tags, llm_hints, context) and a bare tool.code.v1 context; a
// top-level `aruntime` object (an ARuntime tool description) is merged into the context
// (src/authoring/aruntime-file.ts). In the upstream shape the top-level description and
// semantic_version fill context.description / context.version when the context lacks them; a
// `tool:<x>` tag that disagrees with context.name is a warning (the tool runs as context.name, the
// name upstream's runtime registers it under) and the tag is dropped. Problems are reported per
// file, never thrown.

import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { SCHEMA, TAG, type BreadcrumbCreate } from '../breadcrumbs/messages.js';
import { definitionOf } from '../screen/index.js';
import { mergeARuntime } from './aruntime-file.js';

export type ToolFile =
  | {
      ok: true;
      path: string;
      name: string;
      breadcrumb: BreadcrumbCreate & { schema_name: string };
      warnings?: string[];
    }
  | { ok: false; path: string; name?: string; error: string };

/** Every `*.json` file under `target` (a file or a directory, searched recursively), sorted. */
export async function findToolFiles(target: string): Promise<string[]> {
  const info = await stat(target);
  if (info.isFile()) return [target];
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.endsWith('.json')) out.push(path);
    }
  };
  await walk(target);
  return out.sort();
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses one tool file into the breadcrumb to upsert, with the workspace tag set to `workspace`. */
export function parseToolFile(path: string, text: string, workspace: string): ToolFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    return { ok: false, path, error: `not valid JSON: ${(error as Error).message}` };
  }
  if (!isObject(doc)) return { ok: false, path, error: 'the file must hold a JSON object' };
  const upstream = isObject(doc['context']);
  let context = (upstream ? doc['context'] : doc) as Record<string, unknown>;
  const name = typeof context['name'] === 'string' ? context['name'] : undefined;
  if (!name) return { ok: false, path, error: 'context.name is missing or not a string' };
  if (upstream && (doc['context'] as Record<string, unknown>)['aruntime'] !== undefined) {
    return {
      ok: false,
      path,
      name,
      error: 'context.aruntime: the ARuntime description belongs at the top level of the file, next to context',
    };
  }
  if (doc['aruntime'] !== undefined) {
    const { aruntime, ...rest } = context;
    const merged = mergeARuntime(upstream ? context : rest, upstream ? doc['aruntime'] : aruntime);
    if (!merged.ok) return { ok: false, path, name, error: merged.error };
    context = merged.context;
  }
  if (upstream && doc['schema_name'] !== undefined && doc['schema_name'] !== SCHEMA.ToolCode) {
    return {
      ok: false,
      path,
      name,
      error: `schema_name is ${JSON.stringify(doc['schema_name'])}, expected "${SCHEMA.ToolCode}"`,
    };
  }
  const fileTags = upstream && Array.isArray(doc['tags']) ? doc['tags'] : [];
  if (!fileTags.every((tag): tag is string => typeof tag === 'string'))
    return { ok: false, path, name, error: 'tags must be an array of strings' };
  const warnings: string[] = [];
  const wrongName = (tag: string): boolean =>
    tag.startsWith('tool:') && tag !== TAG.tool(name) && !tag.startsWith('tool:request');
  for (const tag of fileTags.filter(wrongName)) {
    warnings.push(
      `tag "${tag}" does not match context.name "${name}": the tool runs as "${name}" (the name upstream's runtime registers it under) and the tag is dropped`,
    );
  }
  const tags = [TAG.Tool, TAG.tool(name), workspace];
  for (const tag of fileTags)
    if (!tag.startsWith('workspace:') && !wrongName(tag) && !tags.includes(tag)) tags.push(tag);
  const str = (key: string): string | undefined =>
    upstream && typeof doc[key] === 'string' ? (doc[key] as string) : undefined;
  if (upstream)
    context = definitionOf(context, { description: doc['description'], semantic_version: doc['semantic_version'] });
  const description =
    str('description') ?? (typeof context['description'] === 'string' ? context['description'] : undefined);
  const semver = str('semantic_version') ?? (typeof context['version'] === 'string' ? context['version'] : undefined);
  const breadcrumb = {
    title: str('title') ?? name,
    schema_name: SCHEMA.ToolCode,
    tags,
    context,
    ...(description !== undefined ? { description } : {}),
    ...(semver !== undefined ? { semantic_version: semver } : {}),
    ...(upstream && doc['llm_hints'] !== undefined ? { llm_hints: doc['llm_hints'] } : {}),
  };
  return { ok: true, path, name, breadcrumb, ...(warnings.length > 0 ? { warnings } : {}) };
}

/** Reads and parses every tool file under `target`; paths in results are relative to `base`. */
export async function loadToolFiles(target: string, workspace: string, base = process.cwd()): Promise<ToolFile[]> {
  const files = await findToolFiles(target);
  const out: ToolFile[] = [];
  for (const file of files) {
    const shown = relative(base, file) || file;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      out.push({ ok: false, path: shown, error: `cannot read: ${(error as Error).message}` });
      continue;
    }
    out.push(parseToolFile(shown, text, workspace));
  }
  return out;
}
