import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The embedded PostgreSQL shared by the run's test files ("" when none was started). */
    cairnSharedPostgresUrl: string;
  }
}

/**
 * vitest's global setup: on a machine with no PostgreSQL server given (`CAIRN_TEST_DATABASE_URL`
 * unset), one embedded server is started for the whole run and every test file's
 * `startTestDatabase()` creates its own database there, instead of each file starting (and
 * initialising) a server of its own. It starts only when a selected test file uses
 * test/helpers/postgres.ts, so `vitest run src/core` pays nothing. The filters are read from the
 * command line; when they cannot be matched, no server is shared and each file starts its own, as
 * before (slower, never wrong). Tests that restart their server (test/helpers/restartable-postgres.ts)
 * keep starting their own.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  project.provide("cairnSharedPostgresUrl", "");
  if (process.env.CAIRN_TEST_DATABASE_URL) return undefined;
  const { testFiles } = await project.globTestFiles(commandLineFilters());
  if (!testFiles.some((file) => readFileSync(file, "utf8").includes("helpers/postgres.ts"))) return undefined;
  // In a child process (test/helpers/shared-postgres-child.ts says why), with more connection
  // slots than the default: test files run side by side, each with pools and worker processes.
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("./helpers/shared-postgres-child.ts", import.meta.url))],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
    });
    child.on("exit", (code) => reject(new Error(`the shared embedded PostgreSQL exited (${code}) before it started`)));
  });
  project.provide("cairnSharedPostgresUrl", url);
  return async () => {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.stdin.end();
    await exited;
  };
}

/** The positional arguments of `vitest [run] [filters…]`; options and their values left out. */
function commandLineFilters(): string[] | undefined {
  const args = process.argv.slice(2);
  const filters: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg.startsWith("-")) {
      // `--option value`: skip the value too (a filter mistaken for a value only narrows the
      // check above, and a file that then finds no shared server starts its own).
      if (!arg.includes("=") && i + 1 < args.length && !(args[i + 1] ?? "").startsWith("-")) i++;
      continue;
    }
    if (i === 0 && (arg === "run" || arg === "watch" || arg === "related")) continue;
    filters.push(arg);
  }
  return filters.length > 0 ? filters : undefined;
}
