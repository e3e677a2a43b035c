// Whether one tool.code.v1 record of the workspace runs, by the catalog's trust rules (src/catalog/catalog.ts
// loads the record and indexes the outcome): the operator's names come first, then the deployment stamp,
// then the definition's validation.

import type { StoreClient } from '../breadcrumbs/index.js';
import { definitionOf, type Origin } from '../screen/index.js';
import type { CatalogOptions, OperatorTool } from './catalog.js';
import { definitionDigest, OPERATOR, type Trust } from './deployment.js';
import { issue, type CodeRecord } from './selection.js';

type FullRecord = Awaited<ReturnType<StoreClient['getBreadcrumbFull']>>;

/**
 * Decides whether a tool.code.v1 record runs: the operator's pinned publication, a name reserved by the
 * operator (bootstrap or host tool), an untrusted record, or a definition that validates (then `tool`
 * and `owner` are set); otherwise `errors` say why not.
 */
export function judgeRecord(
  record: CodeRecord,
  full: FullRecord,
  trust: Trust,
  pinned: OperatorTool | undefined,
  hostNamed: (name: string) => boolean,
  validate: CatalogOptions['validate'],
): void {
  const context = full.context;
  const name = record.name;
  if (pinned) {
    if (
      trust.kind === 'stamped' &&
      trust.owner === OPERATOR &&
      definitionDigest(context) === definitionDigest(pinned.context)
    ) {
      record.publication = true;
    } else {
      record.errors = [
        issue(
          'trust.reserved',
          '/name',
          `the name "${name}" is reserved by the operator's bootstrap file; the runner runs only that file's definition, not this record`,
        ),
      ];
    }
  } else if (name !== undefined && hostNamed(name)) {
    record.errors = [
      issue(
        'trust.reserved',
        '/name',
        `the name "${name}" is reserved by a host tool of the operator's manifests; no tool.code.v1 of that name runs`,
      ),
    ];
  } else if (trust.kind === 'untrusted') {
    record.errors = [issue('trust.untrusted', '/deployment', trust.reason)];
  } else {
    const origin: Origin = trust.kind === 'stamped' && trust.owner === OPERATOR ? 'bootstrap' : 'agent';
    // upstream's shape: the record's own description / semantic_version stand in for missing context fields
    const outcome = validate(definitionOf(context, full), origin);
    if (outcome.ok && outcome.tool) {
      record.tool = outcome.tool;
      record.owner = trust.owner;
    } else {
      record.errors = outcome.errors;
    }
  }
}
