// parseToolFile on upstream's file shape: the top-level description and semantic_version fill the
// context when it lacks them (the context's own values win), unknown fields are kept, and a tool:
// tag that disagrees with context.name is a warning naming both (the tag is dropped, the tool keeps
// context.name).

import { describe, expect, it } from 'vitest';
import { parseToolFile } from '../../src/authoring/tool-files.js';

const file = (doc: Record<string, unknown>): string => JSON.stringify(doc);
const upstream = (context: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  file({
    schema_name: 'tool.code.v1',
    title: 'Sync',
    description: 'Top-level description',
    semantic_version: '2.0.0',
    tags: ['tool', 'tool:models-sync', 'workspace:other', 'sync'],
    llm_hints: { include: ['name'] },
    context,
    ...extra,
  });

describe('parseToolFile: upstream shape', () => {
  it('fills description and version from the top level, keeps unknown fields, warns on a disagreeing tag', () => {
    const parsed = parseToolFile(
      'sync.json',
      upstream({ name: 'models_sync', bootstrap: { mode: 'once' }, ui_schema: { configurable: false } }),
      'workspace:tools',
    );
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.breadcrumb.context).toEqual({
      name: 'models_sync',
      bootstrap: { mode: 'once' },
      ui_schema: { configurable: false },
      description: 'Top-level description',
      version: '2.0.0',
    });
    expect(parsed.breadcrumb).toMatchObject({
      title: 'Sync',
      description: 'Top-level description',
      semantic_version: '2.0.0',
      llm_hints: { include: ['name'] },
    });
    expect(parsed.breadcrumb.tags).toEqual(['tool', 'tool:models_sync', 'workspace:tools', 'sync']);
    expect(parsed.warnings).toEqual([
      'tag "tool:models-sync" does not match context.name "models_sync": the tool runs as "models_sync" (the name upstream\'s runtime registers it under) and the tag is dropped',
    ]);
  });

  it("the context's own description and version win over the record's", () => {
    const parsed = parseToolFile(
      'sync.json',
      upstream({ name: 'models-sync', description: 'own', version: '1.2.3' }),
      'workspace:tools',
    );
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.breadcrumb.context).toMatchObject({ description: 'own', version: '1.2.3' });
    expect(parsed.warnings).toBeUndefined();
  });
});
