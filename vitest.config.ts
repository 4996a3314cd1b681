import { transform } from "esbuild";
import { configDefaults, defineConfig, type Plugin } from "vitest/config";
import { LONG_SUITES } from "./test/long-suites.ts";

/**
 * Vite 8 transforms TypeScript with oxc, which does not lower TC39 standard decorators yet, and
 * Node 20 cannot parse them. Files that use decorators go through esbuild (already installed with
 * tsx), which lowers them the same way `tsx` does at run time.
 */
function standardDecorators(): Plugin {
  return {
    name: "cairn:standard-decorators",
    enforce: "pre",
    async transform(code, id) {
      if (!/\.ts$/.test(id) || id.includes("node_modules") || !/^\s*@\w/m.test(code)) return null;
      const out = await transform(code, { loader: "ts", target: "es2022", sourcemap: true, sourcefile: id });
      return { code: out.code, map: out.map };
    },
  };
}

export default defineConfig({
  plugins: [standardDecorators()],
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // The packed tarball installed from npm (minutes): `npm run test:package`, vitest.package.config.ts;
    // the end-to-end, chaos and property suites: `npm run test:long` (test/long-suites.ts).
    exclude: [...configDefaults.exclude, "test/package-install.test.ts", ...LONG_SUITES],
    // No PostgreSQL server given: one embedded server for the whole run (started only when needed).
    globalSetup: ["test/global-postgres.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
