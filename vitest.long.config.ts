import { configDefaults, defineConfig } from "vitest/config";
import { LONG_SUITES } from "./test/long-suites.ts";
import base from "./vitest.config.ts";

/**
 * `npm run test:long`: the end-to-end, chaos and property suites `npm test` leaves out
 * (test/long-suites.ts says which and why). CI runs them after `npm test`.
 */
export default defineConfig({
  ...base,
  test: { ...base.test, include: [...LONG_SUITES], exclude: [...configDefaults.exclude] },
});
