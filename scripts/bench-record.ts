/**
 * Runs benches and keeps what they print, so the figures in docs/benchmarks.md are bench output:
 * `npm run bench:record -- bench bench:sqlite` runs `npm run bench`, then `npm run bench:sqlite`,
 * each to its end, shows its output as it comes and writes its stdout to bench/results/ under one
 * line saying when, on which commit, Node, CPU and load it ran; then it regenerates
 * docs/benchmarks.md (scripts/bench-docs.ts). `--all` records every bench the template shows.
 * A bench that exits non-zero is not recorded (the old result stays) and the exit code says so.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { PAGE, renderBenchmarks, resultFile, TEMPLATE, templateScripts } from "./bench-docs.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const scripts = args.includes("--all") ? templateScripts(readFileSync(`${root}${TEMPLATE}`, "utf8")) : args;
if (scripts.length === 0) {
  console.error("usage: npm run bench:record -- <bench script>… | --all   (e.g. npm run bench:record -- bench:sqlite)");
  process.exit(2);
}

/** The line above a recorded output: when, where, what. */
function header(script: string): string {
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
  const dirty =
    // The outputs this script writes (bench/results/, docs/benchmarks.md) are not changes to what is measured.
    execFileSync("git", ["status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results", `:!${PAGE}`], {
      cwd: root,
      encoding: "utf8",
    }).trim().length > 0;
  const cpu = cpus();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  const when = new Date().toISOString().slice(0, 16).replace("T", " ");
  return `# npm run ${script} · recorded ${when} UTC · commit ${commit}${dirty ? " (with uncommitted changes)" : ""} · Node ${process.version} · ${cpu.length} × ${cpu[0]?.model.trim() ?? "unknown CPU"} · load average ${load} at the start`;
}

/** Runs `npm run <script>`, echoing its output, and resolves with its stdout and exit code. */
function run(script: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn("npm", ["run", "--silent", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      process.stdout.write(chunk);
    });
    child.on("close", (code) => resolve({ code: code ?? 1, stdout }));
  });
}

let failed = 0;
for (const script of scripts) {
  const line = header(script);
  console.log(`\n${line}`);
  const { code, stdout } = await run(script);
  if (code !== 0) {
    console.error(`npm run ${script} exited ${code}: not recorded`);
    failed++;
    continue;
  }
  mkdirSync(dirname(`${root}${resultFile(script)}`), { recursive: true });
  writeFileSync(`${root}${resultFile(script)}`, `${line}\n${stdout.trim()}\n`);
}
writeFileSync(`${root}${PAGE}`, renderBenchmarks());
console.log(`\nwrote ${PAGE}`);
process.exit(failed > 0 ? 1 : 0);
