import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { SandboxUnavailableError, StorageError } from "../core/errors.ts";
import type { Owner } from "./workspace-files.ts";

/**
 * Workspaces as tar archives, through the system's GNU tar. The archive of one content is the
 * same bytes every time (entries sorted by name, owners written as 0, GNU format without access
 * or change times), so its hash names the content; modification times are kept (a build's
 * up-to-date checks depend on them), so a file touched without a change is a new snapshot.
 */

let gnuTar: Promise<boolean> | undefined;

async function checkTar(): Promise<void> {
  gnuTar ??= new Promise((resolve) => {
    const child = spawn("tar", ["--version"], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once("error", () => resolve(false));
    child.once("close", () => resolve(out.includes("GNU tar")));
  });
  if (!(await gnuTar)) {
    throw new SandboxUnavailableError(
      "snapshots need GNU tar (`tar` on PATH is missing or another tar): install it (Debian: apt-get install tar; macOS: brew install gnu-tar and put its gnubin first on PATH)",
    );
  }
}

/** Runs tar, piping `input` to it or its output to `output`; rejects with its stderr on failure. */
function tar(args: string[], io: { input?: Readable; output?: (out: Readable) => Promise<void>; owner?: Owner }) {
  const child = spawn("tar", args, {
    stdio: [io.input ? "pipe" : "ignore", io.output ? "pipe" : "ignore", "pipe"],
    ...(io.owner ? { uid: io.owner.uid, gid: io.owner.gid } : {}),
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const closed = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve(code));
  });
  const feeding = io.input && child.stdin ? feed(io.input, child.stdin) : Promise.resolve();
  const reading = io.output && child.stdout ? io.output(child.stdout) : Promise.resolve();
  return Promise.all([closed, feeding, reading]).then(([code]) => {
    if (code !== 0) throw new StorageError(`tar ${args[0]} failed (exit ${code}): ${stderr.trim()}`);
  });
}

/**
 * Pipes `input` into tar's stdin to its end. tar stops reading at the archive's end marker and may
 * exit before the padding after it: the rest is read anyway (its hash is checked), not written.
 */
function feed(input: Readable, stdin: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    input.once("end", resolve);
    input.once("error", reject);
    const drain = () => {
      input.unpipe(stdin);
      input.resume();
    };
    stdin.on("error", drain);
    stdin.once("close", drain);
    input.pipe(stdin);
  });
}

/** Archives the workspace into `file`; returns the archive's id and size. */
export async function archiveWorkspace(workspace: string, file: string): Promise<{ id: string; bytes: number }> {
  await checkTar();
  const hash = createHash("sha256");
  let bytes = 0;
  const args = ["--create", "--file=-", "--directory", workspace, "--sort=name", "--format=gnu"];
  args.push("--owner=0", "--group=0", "--numeric-owner", ".");
  await tar(args, {
    output: async (out) => {
      out.on("data", (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
      });
      await pipeline(out, createWriteStream(file, { mode: 0o600 }));
    },
  });
  return { id: `sha256:${hash.digest("hex")}`, bytes };
}

/**
 * Extracts an archive into the empty folder `dir` (as `owner` when given, so its files are that
 * user's); returns the id of the bytes it read, for the caller to check against the one it asked.
 */
export async function extractArchive(archive: Readable, dir: string, owner?: Owner): Promise<string> {
  await checkTar();
  const hash = createHash("sha256");
  archive.on("data", (chunk: Buffer) => hash.update(chunk));
  const args = ["--extract", "--file=-", "--directory", dir, "--preserve-permissions", "--no-same-owner"];
  await tar(args, { input: archive, ...(owner ? { owner } : {}) });
  return `sha256:${hash.digest("hex")}`;
}
