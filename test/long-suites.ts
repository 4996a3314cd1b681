/**
 * The test files `npm test` leaves to `npm run test:long` (vitest.long.config.ts), so that the
 * README's test command passes in minutes on a newcomer's two cores: end-to-end suites that start
 * dozens of `cairn` and worker processes each (about a second of CPU per process start), the
 * chaos suites that kill processes and servers in loops, the long property run, and the 30 s
 * cross-process rate limit. Every one of them still runs in CI (.ci/run runs both scripts). The crash tests proper (SIGKILL at chosen
 * steps: crash, pause-resume-crash, group-commit-crash, sandbox-crash, money-transfer) stay in
 * `npm test`.
 */
export const LONG_SUITES: readonly string[] = [
  "test/cli-governance.test.ts",
  "test/cli-waits.test.ts",
  "test/cli-postgres.test.ts",
  "test/odd-values.property.test.ts",
  "test/pg-chaos.test.ts",
  "test/chaos.test.ts",
  "test/pg-children-chaos.test.ts",
  "test/postgres-restart.test.ts",
  "test/rate-limits-processes.test.ts",
];
