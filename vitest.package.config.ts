import { defineConfig } from "vitest/config";

/**
 * `npm run test:package`: the packed tarball installed into fresh apps (test/package-install.test.ts).
 * It runs npm installs and compiles better-sqlite3, so it takes minutes and is kept out of `npm test`;
 * CI (.ci/run) runs it.
 */
export default defineConfig({
  test: {
    include: ["test/package-install.test.ts"],
    testTimeout: 15 * 60_000,
    hookTimeout: 20 * 60_000,
  },
});
