#!/usr/bin/env node
// Entry of the `tools-runner` binary. On Node >= 22.1 it first turns on Node's on-disk compile cache
// (in the OS temp dir; NODE_DISABLE_COMPILE_CACHE=1 turns it off), so later runs skip compiling the
// CLI's dependencies; then it loads the CLI itself. Node 20 has no such cache and starts as before.

import nodeModule from 'node:module';

(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import('./cli.js');
