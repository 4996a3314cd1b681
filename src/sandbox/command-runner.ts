import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ExecOptions, ExecResult } from "../core/sandbox.ts";
import { OutputTail } from "./output-tail.ts";
import { killGroup } from "./running-commands.ts";
import { isCode } from "./sandbox-directory.ts";

/** How a provider starts one command on the host: the program (bwrap, or the command itself). */
export interface CommandPlan {
  file: string;
  args: string[];
  /** The whole environment of the started program (nothing of the host's is added). */
  env: Record<string, string>;
  cwd: string;
  /** Host user and group to run it as (a root host starting bubblewrap unprivileged). */
  uid?: number;
  gid?: number;
}

/** Told when a command's process group starts and ends (to record it for a destroy). */
export interface CommandHooks {
  started(pid: number): Promise<void>;
  ended(pid: number): Promise<void>;
}

/** How long the output streams may stay open after the command's group was killed. */
const CLOSE_GRACE_MS = 1000;

/**
 * Runs a command as the leader of a new process group and waits for it. Its output is streamed to
 * `onOutput`, the log file and the tail as it arrives. On timeout or abort the whole group is
 * killed (SIGKILL); when the command ends by itself the group is killed too, so no background
 * process outlives the command it belongs to.
 */
export async function runCommand(plan: CommandPlan, options: ExecOptions, hooks: CommandHooks): Promise<ExecResult> {
  const started = performance.now();
  if (options.signal?.aborted) {
    return { exitCode: null, signal: null, timedOut: false, aborted: true, tail: "", outputBytes: 0, durationMs: 0 };
  }
  const log = options.logPath === undefined ? undefined : await openLog(options.logPath);
  const child = spawn(plan.file, plan.args, {
    cwd: plan.cwd,
    env: plan.env,
    detached: true,
    // No stdin to give: /dev/null, which reads as at its end at once.
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    ...(plan.uid === undefined ? {} : { uid: plan.uid }),
    ...(plan.gid === undefined ? {} : { gid: plan.gid }),
  });
  try {
    const pid = await spawned(child).catch((error) => {
      // As a shell says it: 127 for a program that is not there, 126 for one that cannot run.
      if (isCode(error, "ENOENT")) return { exitCode: 127, why: "command not found" };
      if (isCode(error, "EACCES")) return { exitCode: 126, why: "permission denied" };
      throw error;
    });
    if (typeof pid !== "number") {
      const tail = `${plan.file}: ${pid.why}\n`;
      return {
        exitCode: pid.exitCode,
        signal: null,
        timedOut: false,
        aborted: false,
        tail,
        outputBytes: 0,
        durationMs: 0,
      };
    }
    const recorded = hooks.started(pid).catch(() => undefined);
    const output = collect(child, options, log);
    const ending = await supervise(child, pid, options);
    // Forgetting the ended command is off the result's path (a stale record kills nothing: the
    // start time it holds no longer matches).
    void recorded.then(() => hooks.ended(pid)).catch(() => undefined);
    return { ...ending, ...(await output), durationMs: performance.now() - started };
  } finally {
    if (log) await new Promise((resolve) => log.end(resolve));
  }
}

async function openLog(path: string): Promise<WriteStream> {
  await mkdir(dirname(path), { recursive: true });
  const log = createWriteStream(path);
  await new Promise((resolve, reject) => log.once("open", resolve).once("error", reject));
  return log;
}

/** The child's pid once it started; rejects with the spawn error (program missing, cwd missing). */
function spawned(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("spawn", () => {
      child.off("error", reject);
      child.on("error", () => undefined);
      resolve(child.pid as number);
    });
  });
}

/** Feeds stdin, then waits for the command's end, killing its group on timeout, abort and end. */
async function supervise(
  child: ChildProcess,
  pid: number,
  options: ExecOptions,
): Promise<Pick<ExecResult, "exitCode" | "signal" | "timedOut" | "aborted">> {
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(options.stdin);
  let timedOut = false;
  let aborted = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          killGroup(pid);
        }, options.timeoutMs);
  const onAbort = () => {
    aborted = true;
    killGroup(pid);
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve([child.exitCode, child.signalCode]);
    else child.once("exit", (code, sig) => resolve([code, sig]));
  });
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", onAbort);
  killGroup(pid);
  return { exitCode, signal, timedOut, aborted };
}

/** Reads both output streams to their end (or a grace after the command ended). */
async function collect(
  child: ChildProcess,
  options: ExecOptions,
  log: WriteStream | undefined,
): Promise<{ tail: string; outputBytes: number }> {
  const tail = new OutputTail();
  let outputBytes = 0;
  const read = (stream: Readable, name: "stdout" | "stderr") =>
    new Promise<void>((resolve) => {
      const decoder = new StringDecoder("utf8");
      const emit = (text: string) => {
        if (text === "") return;
        tail.push(text);
        try {
          options.onOutput?.({ stream: name, text });
        } catch {
          // A listener's failure is the listener's: the command and its log go on.
        }
      };
      stream.on("data", (chunk: Buffer) => {
        outputBytes += chunk.length;
        if (log && !log.write(chunk)) {
          stream.pause();
          log.once("drain", () => stream.resume());
        }
        emit(decoder.write(chunk));
      });
      stream.once("close", () => {
        emit(decoder.end());
        resolve();
      });
      stream.once("error", () => resolve());
    });
  const streams = Promise.all([read(child.stdout as Readable, "stdout"), read(child.stderr as Readable, "stderr")]);
  // A process that escaped the group (local: a daemon started with setsid) may hold a pipe open:
  // once the command ended, streams silent for a grace are closed.
  child.once("exit", () => {
    let seen = -1;
    const timer = setInterval(() => {
      if (seen === outputBytes) {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }
      seen = outputBytes;
    }, CLOSE_GRACE_MS);
    void streams.finally(() => clearInterval(timer));
  });
  await streams;
  return { tail: tail.text(), outputBytes };
}
