import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module of the repository's scripts, without types.
import { checkCommitMessage } from "../scripts/commit-msg.mjs";
import { root } from "./helpers/cli.ts";

/**
 * The architecture (docs/architecture.md) as tests: the folder graph that `npm run lint` enforces
 * is the one scripts/layers.mjs states, and the rule does fail on an upward import, on an import
 * that does I/O in core, and on an import loop; no source file is over 400 lines and no function
 * over 80; commit subjects follow the convention.
 */

const biome = join(root, "node_modules", ".bin", "biome");

/** Source files the size rules cover: what ships and what measures it, not tests. */
function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== "peers") walk(path);
      } else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) {
        out.push(path);
      }
    }
  };
  for (const dir of ["src", "dashboard/src", "bench", "examples"]) walk(join(root, dir));
  return out;
}

describe("the folder graph", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-architecture-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Lints `files` (path → text) in a project of their own under the repository's biome.json. */
  function lint(files: Record<string, string>): { code: number | null; out: string } {
    const project = mkdtempSync(join(dir, "p-"));
    const config = JSON.parse(readFileSync(join(root, "biome.json"), "utf8")) as Record<string, unknown>;
    delete config.$schema;
    writeFileSync(join(project, "biome.json"), JSON.stringify(config));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), text);
    }
    const result = spawnSync(biome, ["lint", "src"], { cwd: project, encoding: "utf8" });
    return { code: result.status, out: `${result.stdout}${result.stderr}` };
  }

  it("biome.json carries the graph scripts/layers.mjs states", () => {
    const check = spawnSync(process.execPath, [join(root, "scripts", "layers.mjs"), "--check"], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
  });

  it("refuses an upward import, at any depth", () => {
    const worker = "export class Worker {}\n";
    const upward = lint({
      "src/worker/worker.ts": worker,
      "src/core/x.ts": 'import { Worker } from "../worker/worker.ts";\nexport const x = Worker;\n',
      "src/core/envelope/y.ts": 'import { Worker } from "../../worker/worker.ts";\nexport const y = Worker;\n',
    });
    expect(upward.code).not.toBe(0);
    expect(upward.out).toMatch(/src\/core\/x\.ts.*noRestrictedImports/);
    expect(upward.out).toMatch(/src\/core\/envelope\/y\.ts.*noRestrictedImports/);
    expect(upward.out).toContain("core/ may import only from core (docs/architecture.md)");
    const allowed = lint({
      "src/worker/worker.ts": worker,
      "src/runtime/z.ts": 'import { Worker } from "../worker/worker.ts";\nexport const z = Worker;\n',
    });
    expect(allowed.out).not.toContain("noRestrictedImports");
  });

  it("refuses I/O in core, and an import loop anywhere", () => {
    const io = lint({ "src/core/x.ts": 'import { readFileSync } from "node:fs";\nexport const x = readFileSync;\n' });
    expect(io.code).not.toBe(0);
    expect(io.out).toContain("core/ does no I/O");
    const loop = lint({
      "src/runtime/a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "src/runtime/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
    });
    expect(loop.code).not.toBe(0);
    expect(loop.out).toContain("noImportCycles");
  });

  it("holds for the tree as it is", () => {
    const result = spawnSync(biome, ["lint", "src"], { cwd: root, encoding: "utf8" });
    expect(result.stdout + result.stderr).not.toMatch(/noRestrictedImports|noImportCycles/);
    expect(result.status).toBe(0);
  });
});

describe("sizes", () => {
  /** Files allowed past 400 lines, and why. */
  const LONG_FILES: Record<string, string> = {};
  /** Functions allowed past 80 lines (file:name), and why. */
  const LONG_FUNCTIONS: Record<string, string> = {};

  it("no source file is over 400 lines", () => {
    const long = sourceFiles()
      .map((file) => ({ file: relative(root, file), lines: readFileSync(file, "utf8").split("\n").length - 1 }))
      .filter(({ file, lines }) => lines > 400 && !(file in LONG_FILES));
    expect(long).toEqual([]);
  });

  it("no function is over 80 lines", () => {
    const long: string[] = [];
    for (const file of sourceFiles()) {
      const text = readFileSync(file, "utf8");
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && "body" in node && node.body) {
          const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
          const end = source.getLineAndCharacterOfPosition(node.end).line;
          const name = `${relative(root, file)}:${node.name?.getText(source) ?? `line ${start + 1}`}`;
          if (end - start + 1 > 80 && !(name in LONG_FUNCTIONS)) long.push(`${name} (${end - start + 1} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(long).toEqual([]);
  });
});

describe("the commit convention", () => {
  it("takes a scoped subject of at most 72 characters, with the body after a blank line", () => {
    expect(checkCommitMessage("worker: hand back runs claimed during shutdown\n\nWhy, and the figures.\n")).toEqual([]);
    expect(checkCommitMessage("Merge branch 'h/races'\n")).toEqual([]);
    expect(checkCommitMessage("# a comment\npostgres: lock by primary key\n")).toEqual([]);
  });

  it("refuses a long subject, one without a scope, and a body run on", () => {
    const long = `worker: ${"x".repeat(70)}`;
    expect(checkCommitMessage(long).join("\n")).toMatch(/over 72/);
    expect(checkCommitMessage("Fixed the worker\n").join("\n")).toMatch(/must start with a scope/);
    expect(checkCommitMessage("worker: a change\nand its body\n").join("\n")).toMatch(/blank line/);
    expect(checkCommitMessage("\n").join("\n")).toMatch(/empty/);
  });

  it("is the hook git runs in this repository", () => {
    const hook = readFileSync(join(root, ".githooks", "commit-msg"), "utf8");
    expect(hook).toContain("scripts/commit-msg.mjs");
    const message = join(mkdtempSync(join(tmpdir(), "cairn-commit-")), "COMMIT_EDITMSG");
    writeFileSync(message, "Review: something without a scope that goes on for longer than anyone should write\n");
    const refused = spawnSync(process.execPath, [join(root, "scripts", "commit-msg.mjs"), message], {
      encoding: "utf8",
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("commit message refused");
  });
});
