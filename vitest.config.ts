import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ once when stale: some tests run the real CLI (node dist/cli/main.js).
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Deno children and HTTP servers are real: keep output readable when a test fails.
    reporters: ['default'],
  },
});
