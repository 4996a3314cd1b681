import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The repository root, where `bin/cairn.js` runs from. */
export const root = fileURLToPath(new URL("../..", import.meta.url));

/** What a finished `cairn` process printed. */
export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `node bin/cairn.js <args>` with no database chosen by the environment. */
export function start(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ["bin/cairn.js", ...args], {
    cwd: root,
    env: { ...process.env, CAIRN_DB: "", CAIRN_DATABASE_URL: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Runs `cairn <args>` to its end. */
export function cairn(args: string[], env: Record<string, string> = {}): Promise<Result> {
  const child = start(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A `cairn` process left running: what it printed so far, and its end. */
export interface Background {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<Result>;
}

/** Starts `cairn <args>` and returns at once (for `cairn run` of a run that pauses, `cairn worker`). */
export function background(args: string[], env: Record<string, string> = {}): Background {
  const child = start(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<Result>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
