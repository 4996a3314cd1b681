/**
 * What a sandbox costs beside what it wraps, measured in one run so that the machine's noise falls
 * on every row alike (each round runs every measure once, in turn):
 *
 * - a plain `child_process.spawn("true")`, and a bare `bwrap … true` with the namespaces, binds and
 *   flags the bubblewrap provider uses (as the same user), without Cairn; both with their output
 *   read to its end, as `exec` reads it;
 * - per provider (bubblewrap, local): `exec(["true"])`; `create` of a new label; `create` of a label
 *   that exists (what a retry or a new worker after a crash pays); `snapshot` and `restore` of a
 *   workspace of 50 MB (random bytes in 1 MB files; one small file changes each round, so every
 *   snapshot is new and written to the store).
 *
 * Prints p50 and p90 in milliseconds beside the goals — `exec` within 2× of bare bwrap (p50 against
 * p50), create-by-label under 50 ms (p50) — and MISSED for a goal not met. Without bubblewrap its
 * rows are left out and the reason printed.
 *
 *   npm run bench:sandbox
 *   npm run bench:sandbox -- --rounds 50 --big-rounds 5 --mb 50
 */
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BubblewrapProvider, LocalSandboxProvider, type Sandbox, type SandboxProvider } from "cairn/sandbox";
import { printGrid, quantile } from "./report.ts";

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "30" },
    "big-rounds": { type: "string", default: "5" },
    mb: { type: "string", default: "50" },
  },
});
const ROUNDS = Number(flags.rounds);
const BIG_ROUNDS = Number(flags["big-rounds"]);
const MB = Number(flags.mb);
/** The host user bwrap runs as: the provider's default when this process is root. */
const USER = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

interface Goal {
  text: string;
  met: (p50: number, rows: Map<string, number[]>) => boolean;
}

/** Milliseconds per call of each measure, by name, in the order first measured. */
const rows = new Map<string, number[]>();
const goals = new Map<string, Goal>();

async function measure(name: string, fn: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await fn();
  const ms = performance.now() - started;
  rows.set(name, [...(rows.get(name) ?? []), ms]);
}

/**
 * Runs a program and reads its output to the end, as any caller that wants the output does (the
 * output's end comes after the exit when the program's children hold it: bwrap's PID 1 does).
 */
function run(file: string, args: string[], options: { uid?: number; gid?: number } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      stdio: ["ignore", "pipe", "pipe"],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin" },
      ...options,
    });
    child.stdout.resume();
    child.stderr.resume();
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))));
  });
}

/** The provider's bwrap command line for `true`, by hand (bench/ sees only the public API). */
function bareBwrapArgs(workspace: string): string[] {
  const args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  args.push("--unshare-net", "--hostname", "sandbox", "--die-with-parent", "--new-session");
  args.push("--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc");
  for (const [link, target] of [
    ["/bin", "usr/bin"],
    ["/sbin", "usr/sbin"],
    ["/lib", "usr/lib"],
    ["/lib64", "usr/lib64"],
  ]) {
    args.push("--symlink", target as string, link as string);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", workspace, "/workspace");
  return [...args, "--chdir", "/workspace", "--", "true"];
}

/** A workspace of `mb` files of 1 MB of random bytes. */
async function fill(sandbox: Sandbox, mb: number): Promise<void> {
  for (let i = 0; i < mb; i++) await sandbox.writeFile(`data/${String(i).padStart(3, "0")}.bin`, randomBytes(2 ** 20));
}

/** One provider's rows for this round; `big` adds snapshot and restore of the large workspace. */
async function roundOf(
  kind: string,
  provider: SandboxProvider,
  round: number,
  big: Sandbox | undefined,
): Promise<void> {
  const label = `bench/${round}`;
  let sandbox: Sandbox | undefined;
  await measure(`${kind}: create (new label)`, async () => {
    sandbox = await provider.create(label, {});
  });
  await measure(`${kind}: create (label exists)`, () => provider.create(label, {}));
  await measure(`${kind}: exec(["true"])`, () => (sandbox as Sandbox).exec(["true"]));
  await sandbox?.destroy();
  if (big === undefined) return;
  await big.writeFile("round.txt", String(round));
  let id = "";
  await measure(`${kind}: snapshot ${MB} MB`, async () => {
    id = (await big.snapshot()).id;
  });
  await measure(`${kind}: restore ${MB} MB`, () => big.restore(id));
}

function setGoals(bwrap: boolean): void {
  for (const kind of ["bubblewrap", "local"]) {
    goals.set(`${kind}: create (label exists)`, { text: "< 50 ms", met: (p50) => p50 < 50 });
  }
  if (!bwrap) return;
  goals.set(`bubblewrap: exec(["true"])`, {
    text: "≤ 2× bare bwrap",
    met: (p50, all) => p50 <= 2 * quantile(all.get("bare bwrap … true") ?? [], 0.5),
  });
}

function report(notes: string[]): void {
  const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
  const lines = [...rows].map(([name, ms]) => {
    const p50 = quantile(ms, 0.5);
    const goal = goals.get(name);
    const verdict = goal === undefined ? "" : goal.met(p50, rows) ? "met" : "MISSED";
    return [name, String(ms.length), fmt(p50), fmt(quantile(ms, 0.9)), goal?.text ?? "", verdict];
  });
  console.log();
  printGrid(["", "n", "p50 ms", "p90 ms", "goal (p50)", ""], lines);
  console.log();
  for (const note of notes) console.log(note);
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "cairn-bench-sandbox-"));
  chmodSync(root, 0o711);
  try {
    const why = await BubblewrapProvider.unavailable({ dir: join(root, "bubblewrap") });
    const providers: [string, SandboxProvider][] = [["local", new LocalSandboxProvider({ dir: join(root, "local") })]];
    if (why === undefined) providers.unshift(["bubblewrap", new BubblewrapProvider({ dir: join(root, "bubblewrap") })]);
    const bigs = new Map<string, Sandbox>();
    for (const [kind, provider] of providers) {
      const big = await provider.create("bench/big", {});
      await fill(big, MB);
      bigs.set(kind, big);
    }
    const bare = join(root, "bare");
    execFileSync("mkdir", ["-m", "700", bare]);
    if ("uid" in USER) execFileSync("chown", [`${USER.uid}:${USER.gid}`, bare]);
    console.log(`sandbox bench: ${ROUNDS} rounds (${BIG_ROUNDS} with the ${MB} MB workspace), node ${process.version}`);
    console.log(
      `${cpus().length} cores, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}; folders in ${root}`,
    );
    for (let round = 0; round < ROUNDS; round++) {
      await measure('spawn("true")', () => run("true", []));
      if (why === undefined) await measure("bare bwrap … true", () => run("bwrap", bareBwrapArgs(bare), USER));
      for (const [kind, provider] of providers) {
        await roundOf(kind, provider, round, round < BIG_ROUNDS ? bigs.get(kind) : undefined);
      }
    }
    setGoals(why === undefined);
    const notes = why === undefined ? [] : [`bubblewrap rows left out: ${why}`];
    if ("uid" in USER) notes.push(`bwrap runs as uid ${USER.uid} (this process is root), as the provider runs it`);
    report(notes);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
