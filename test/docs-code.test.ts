import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../src/cli/main.ts";
import { allCodeBlocks, type CodeBlock, inlineCode, repoRoot, writtenDocFiles } from "./helpers/markdown-docs.ts";

/**
 * Every TypeScript block of README.md and docs/ compiles, imports included, under the
 * repository's strict tsconfig. `cairn`, `cairn/sqlite`, … resolve as they do in a user's project:
 * through package.json's exports to the built declarations in dist/ (the package names itself, so
 * the blocks, written inside the repository, import it by name); `npm run build` first. A block is left out only with a visible
 * `<!-- not-checked: reason -->` just before its fence; the test prints how many are. A block
 * after `<!-- file: name.ts -->` is that module, which the page's other blocks may import.
 * Shell blocks may name only npm scripts package.json has and `cairn` commands the CLI has.
 */

const TS_LANGS = new Set(["ts", "typescript"]);
const SH_LANGS = new Set(["sh", "bash", "shell", "console"]);
const scratch = join(repoRoot, ".scratch", "docs-code");
/** A block that must fail: proves the check reports a block that does not compile. */
const BROKEN = 'import { defineAgent } from "cairn";\nconst agent: number = defineAgent;\nexport { agent };\n';

const blocks = allCodeBlocks();
const checked = blocks.filter((b) => TS_LANGS.has(b.lang) && b.notChecked === undefined);
const optedOut = blocks.filter((b) => TS_LANGS.has(b.lang) && b.notChecked !== undefined);

/** Each page's blocks in a folder of their own: a block named `<!-- file: x.ts -->` is `./x.ts` there. */
function fileName(block: CodeBlock): string {
  return join(scratch, block.file.replaceAll(/[^a-zA-Z0-9]+/g, "-"), block.fileName ?? `L${block.line}.ts`);
}

/** Compiles the blocks (and BROKEN) in one program; the messages by file name. */
function typeCheck(toCheck: readonly CodeBlock[]): Map<string, string[]> {
  if (!existsSync(join(repoRoot, "dist", "index.d.ts"))) throw new Error("no dist/: run `npm run build` first");
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const files = toCheck.map((block) => {
    const path = fileName(block);
    if (existsSync(path)) throw new Error(`${block.file}:${block.line}: a second block named ${block.fileName}`);
    mkdirSync(dirname(path), { recursive: true });
    // A block without an import or export would be a script sharing one global scope with the others.
    writeFileSync(path, /^\s*(import|export)\s/m.test(block.code) ? block.code : `${block.code}\nexport {};\n`);
    return path;
  });
  const brokenPath = join(scratch, "broken.ts");
  writeFileSync(brokenPath, BROKEN);
  const config = ts.getParsedCommandLineOfConfigFile(
    join(repoRoot, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error("tsconfig.json did not parse");
  const options: ts.CompilerOptions = { ...config.options, noEmit: true };
  const program = ts.createProgram([...files, brokenPath], options);
  const messages = new Map<string, string[]>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (!d.file?.fileName.startsWith(scratch)) continue;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    const list = messages.get(d.file.fileName) ?? [];
    list.push(`${line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    messages.set(d.file.fileName, list);
  }
  return messages;
}

/** A `cairn` command line of a shell block: the sub-command and the options given to it. */
interface CairnCall {
  command: string;
  options: string[];
}

/** The npm scripts and `cairn` command lines a shell block names. */
function shellNames(code: string): { scripts: string[]; commands: CairnCall[] } {
  const scripts: string[] = [];
  const commands: CairnCall[] = [];
  const text = code.replaceAll(/\\\n/g, " ");
  for (const line of text.split("\n")) {
    const command = line.replace(/^\s*\$\s+/, "").replace(/\s#.*$/, "");
    for (const m of command.matchAll(/\bnpm\s+(?:run\s+)?([\w:-]+)/g)) {
      const name = m[1] ?? "";
      if (!["install", "ci", "create", "pack", "exec", "init", "i"].includes(name)) scripts.push(name);
    }
    for (const m of command.matchAll(
      /(?:^|[\s;&|(])(?:npx\s+)?(?:cairn|node\s+bin\/cairn\.js)\s+([\w-]+)([^;&|)]*)/g,
    )) {
      const options = [...(m[2] ?? "").replaceAll(/'[^']*'|"[^"]*"/g, "").matchAll(/(?:^|[\s[|])--([\w-]+)/g)];
      commands.push({ command: m[1] ?? "", options: options.map((o) => o[1] ?? "") });
    }
  }
  return { scripts, commands };
}

describe("the documentation's code", () => {
  it("type-checks every TypeScript block of README.md and docs/", { timeout: 300_000 }, () => {
    expect(checked.length).toBeGreaterThan(10);
    console.log(
      `docs code: ${checked.length} TypeScript blocks type-checked, ${optedOut.length} opted out` +
        optedOut.map((b) => `\n  not checked: ${b.file}:${b.line} (${b.notChecked})`).join(""),
    );
    const messages = typeCheck(checked);
    // The check itself: a block that does not compile is reported.
    expect(messages.get(join(scratch, "broken.ts"))?.join("\n")).toMatch(/not assignable to type 'number'/);
    const failures = checked.flatMap((block) =>
      (messages.get(fileName(block)) ?? []).map((m) => {
        const [line = "0", ...text] = m.split(": ");
        return `${block.file}:${block.line + Number(line)}: ${text.join(": ")}`;
      }),
    );
    expect(failures, "blocks that do not compile (against dist/: after changing src/, npm run build)").toEqual([]);
  });

  it("names only npm scripts package.json has, and cairn commands and options the CLI has", () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const known = new Set([...COMMANDS.map((c) => c.name), "help", "--version"]);
    // Shell blocks, and the inline code that spells a cairn command line (`cairn show <runId> --follow`).
    const inline = writtenDocFiles()
      .flatMap((file) => inlineCode(file, readFileSync(join(repoRoot, file), "utf8")))
      .filter((span) => /^(npx )?cairn [a-z-]/.test(span.code))
      .map((span) => ({ file: span.file, line: span.line, lang: "sh", code: span.code.replaceAll("\\|", "|") }));
    const shells = [...blocks.filter((b) => SH_LANGS.has(b.lang)), ...inline];
    const unknown: string[] = [];
    let named = 0;
    let optionsNamed = 0;
    for (const block of shells) {
      const { scripts, commands } = shellNames(block.code);
      named += scripts.length + commands.length;
      optionsNamed += commands.reduce((n, c) => n + c.options.length, 0);
      for (const s of scripts) if (!(s in pkg.scripts)) unknown.push(`${block.file}:${block.line}: npm script "${s}"`);
      for (const { command, options } of commands) {
        const definition = COMMANDS.find((c) => c.name === command);
        if (!known.has(command)) unknown.push(`${block.file}:${block.line}: cairn command "${command}"`);
        for (const option of definition ? options : []) {
          if (!(option in definition!.options) && option !== "help") {
            unknown.push(`${block.file}:${block.line}: option --${option} of cairn ${command}`);
          }
        }
      }
    }
    console.log(
      `docs shell blocks and inline cairn command lines: ${shells.length}, naming ${named} npm scripts and cairn commands (${optionsNamed} options)`,
    );
    expect(named).toBeGreaterThan(10);
    expect(unknown).toEqual([]);
    // The check itself.
    expect(shellNames("npm run bench:nope && npx cairn frobnicate x --fast | jq '.a --b'")).toEqual({
      scripts: ["bench:nope"],
      commands: [{ command: "frobnicate", options: ["fast"] }],
    });
  });
});
