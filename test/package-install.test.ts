import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "./helpers/cli.ts";

/**
 * The package as a user installs it (issue 25): `npm pack`, then the tarball installed into a
 * fresh app with nothing else of cairn's (no optional peer). Slow (npm installs, better-sqlite3
 * compiles from source): it runs in `npm run test:package`, which CI runs, not in `npm test`.
 * npm's cache is kept in the temp directory between runs, so only the first run downloads.
 */

const CACHE = join(tmpdir(), "cairn-package-test-npm-cache");
const NPM_FLAGS = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", `--cache=${CACHE}`];
const own = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  version: string;
  devDependencies: Record<string, string>;
};

let work: string;
let tarball: string;
let app: string;

interface Outcome {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` in `cwd` to its end, with npm's cache and no CI database in the environment. */
function sh(cwd: string, command: string, args: string[]): Outcome {
  const result = spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, CAIRN_DB: "", CAIRN_DATABASE_URL: "", npm_config_cache: CACHE },
    timeout: 15 * 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Like {@link sh}, and fails the test with what the command printed when it exits non-zero. */
function ok(cwd: string, command: string, args: string[]): string {
  const out = sh(cwd, command, args);
  if (out.status !== 0)
    throw new Error(`${command} ${args.join(" ")} exited ${out.status}:\n${out.stdout}\n${out.stderr}`);
  return out.stdout;
}

/** `node --input-type=module -e <code>` in the app. */
function esm(code: string): Outcome {
  return sh(app, process.execPath, ["--input-type=module", "-e", code]);
}

/** The exact version of a dev dependency of the repository, for the app's tooling. */
function dev(name: string): string {
  return `${name}@${(own.devDependencies[name] ?? "latest").replace(/^[\^~]/, "")}`;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "cairn-package-"));
  if (!existsSync(join(root, "dist", "index.js"))) throw new Error("no dist/: run `npm run build` first");
  // --ignore-scripts: `prepare` would rebuild dist/; the test packs what was built.
  ok(root, "npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", work]);
  const packed = readdirSync(work).find((f) => f.endsWith(".tgz"));
  if (packed === undefined) throw new Error(`npm pack wrote no tarball in ${work}`);
  tarball = join(work, packed);
  app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  // The core and the tools of a TypeScript app; no optional peer of cairn.
  ok(app, "npm", ["install", ...NPM_FLAGS, tarball, dev("typescript"), dev("@types/node")]);
}, 20 * 60_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("the packed tarball in a fresh app", () => {
  it("installs only the core: no optional peer, no tsx", () => {
    const modules = readdirSync(join(app, "node_modules"));
    for (const peer of ["pg", "@ai-sdk", "@modelcontextprotocol", "tsx", "@types/pg", "vitest"]) {
      expect(modules, peer).not.toContain(peer);
    }
    expect(modules).toContain("better-sqlite3");
    expect(modules).toContain("zod"); // a required peer: npm installs it
  });

  it("imports in ESM: the root and the subpaths that need no optional peer", () => {
    const out = esm(`
      const root = await import("cairn");
      const names = [];
      for (const entry of ["cairn/sqlite", "cairn/server", "cairn/client", "cairn/sandbox", "cairn/testing"]) {
        names.push(...Object.keys(await import(entry)));
      }
      console.log(JSON.stringify({ root: typeof root.Runtime, defineAgent: typeof root.defineAgent, names }));
    `);
    expect(out.stderr).toBe("");
    const seen = JSON.parse(out.stdout) as { root: string; defineAgent: string; names: string[] };
    expect(seen.root).toBe("function");
    expect(seen.defineAgent).toBe("function");
    expect(seen.names).toEqual(expect.arrayContaining(["SqliteBackend", "TestRuntime", "CairnClient"]));
  });

  it("require()s from CommonJS (Node's require of an ES module, no top-level await in the entries)", () => {
    const out = sh(app, process.execPath, [
      "-e",
      `const c = require("cairn"); const t = require("cairn/testing"); console.log(typeof c.Runtime, typeof t.TestRuntime)`,
    ]);
    const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
    if (major > 22 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19)) {
      expect(out.stdout.trim()).toBe("function function");
    } else {
      // Older Node cannot require an ES module: it says so, and names the way out.
      expect(out.stderr).toMatch(/ERR_REQUIRE_ESM/);
    }
  });

  it("type-checks in TypeScript with skipLibCheck: false", () => {
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
        },
        files: ["check.ts"],
      }),
    );
    writeFileSync(
      join(app, "check.ts"),
      `import { defineAgent, defineTool, Runtime, type RunState } from "cairn";
import { CairnClient } from "cairn/client";
import { createServer } from "cairn/server";
import { SqliteBackend } from "cairn/sqlite";
import { TestRuntime } from "cairn/testing";
import { z } from "zod";
export const agent = defineAgent({
  name: "a",
  tools: { add: defineTool({ input: z.object({ n: z.number() }), run: (_ctx, { n }) => n + 1 }) },
  workflows: { async go(ctx, { n }: { n: number }) { return ctx.tool("add", { n }); } },
  inputs: { go: z.object({ n: z.number() }) },
});
export const made = [Runtime, CairnClient, createServer, SqliteBackend, TestRuntime];
export const state: RunState = "COMPLETED";
`,
    );
    const out = sh(app, join(app, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"]);
    expect(out.stdout + out.stderr).toBe("");
    expect(out.status).toBe(0);
  });

  // Node's test runner prints TAP (`# pass 1`) when piped on Node 20 and 22, its spec reporter
  // (`ℹ pass 1`) on Node 24: the runs below accept either.
  it("runs cairn/testing under node:test", () => {
    writeFileSync(
      join(app, "agent.test.mjs"),
      `import assert from "node:assert/strict";
import { test } from "node:test";
import { defineAgent, defineTool } from "cairn";
import { TestRuntime } from "cairn/testing";
import { z } from "zod";

const greeter = defineAgent({
  name: "greeter",
  tools: { hello: defineTool({ input: z.object({ name: z.string() }), run: (_ctx, { name }) => "hello " + name }) },
  inputs: { greet: z.object({ name: z.string() }) },
  workflows: {
    async greet(ctx, { name }) {
      await ctx.sleep(30 * 24 * 3600_000); // 30 days, on the virtual clock
      return ctx.tool("hello", { name });
    },
  },
});

test("a workflow that sleeps 30 days completes", async () => {
  const t = new TestRuntime({ agents: [greeter] });
  const run = await t.run(greeter, "greet", { name: "ada" });
  assert.equal((await t.settle(run.id)).state, "COMPLETED");
  assert.equal(await run.result(), "hello ada");
  await t.shutdown();
});
`,
    );
    const out = sh(app, process.execPath, ["--test", "agent.test.mjs"]);
    expect(out.stdout).toMatch(/[#ℹ] pass 1\n/);
    expect(out.status).toBe(0);
  });

  it("the CLI answers --version, and says how to load TypeScript without tsx", () => {
    expect(ok(app, "npx", ["--no-install", "cairn", "--version"])).toContain(`cairn ${own.version}`);
    // An enum: Node 22.18+ strips erasable types by itself and would load plain annotations; an
    // enum needs a real TypeScript loader on every Node (ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX there).
    writeFileSync(join(app, "agent.ts"), `export enum Mode { A, B }\nexport const x: number = 1;\n`);
    const out = sh(app, "npx", ["--no-install", "cairn", "run", "agent.ts", "a", "go"]);
    expect(out.status).toBe(1);
    expect(out.stderr).toContain("npm install -D tsx");
  });

  it("works with the lowest zod its peer range claims (4.0.0)", () => {
    const range = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { peerDependencies: object })
      .peerDependencies as Record<string, string>;
    expect(range.zod).toBe("^4.0.0");
    ok(app, "npm", ["install", ...NPM_FLAGS, "zod@4.0.0"]);
    try {
      const tsc = sh(app, join(app, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"]);
      expect(tsc.stdout + tsc.stderr).toBe("");
      const run = sh(app, process.execPath, ["--test", "agent.test.mjs"]);
      expect(run.stdout).toMatch(/[#ℹ] pass 1\n/);
    } finally {
      ok(app, "npm", ["install", ...NPM_FLAGS, dev("zod")]);
    }
  });

  it("the optional subpaths fail with a message naming the package to install, until it is", () => {
    const missing = esm(`
      const found = [];
      for (const entry of ["cairn/postgres", "cairn/ai-sdk"]) {
        try { await import(entry); found.push("loaded " + entry); }
        catch (e) { found.push(e.code + ": " + e.message); }
      }
      const { Runtime, defineAgent } = await import("cairn");
      const a = defineAgent({ name: "a", tools: {}, workflows: { async go() { return 1; } } });
      try { new Runtime({ agents: [a], mcp: { files: { command: "true" } } }); found.push("made a runtime"); }
      catch (e) { found.push(e.code + ": " + e.message); }
      console.log(JSON.stringify(found));
    `);
    const [postgres, aiSdk, mcp] = JSON.parse(missing.stdout) as string[];
    expect(postgres).toMatch(/^MISSING_PEER_DEPENDENCY: cairn\/postgres needs the package "pg".*`npm install pg`/);
    expect(aiSdk).toMatch(/^MISSING_PEER_DEPENDENCY: cairn\/ai-sdk needs .*`npm install @ai-sdk\/provider`/);
    expect(mcp).toMatch(/^MISSING_PEER_DEPENDENCY: .*`npm install @modelcontextprotocol\/sdk`/);

    ok(app, "npm", ["install", ...NPM_FLAGS, dev("pg"), dev("@ai-sdk/openai"), dev("@modelcontextprotocol/sdk")]);
    const present = esm(`
      const { PostgresBackend } = await import("cairn/postgres");
      const { openai } = await import("cairn/ai-sdk");
      const { Runtime, defineAgent } = await import("cairn");
      const a = defineAgent({ name: "a", tools: {}, workflows: { async go() { return 1; } } });
      const runtime = new Runtime({ agents: [a], mcp: { files: { command: "true" } } });
      await runtime.shutdown();
      console.log(typeof PostgresBackend, openai("gpt-4o-mini", { apiKey: "k" }).name);
    `);
    expect(present.stderr).toBe("");
    expect(present.stdout.trim()).toBe("function openai.chat:gpt-4o-mini");
  });

  it("`cairn init` makes an app whose test and typecheck pass on first try", () => {
    ok(app, "npx", ["--no-install", "cairn", "init", "../scaffolded"]);
    const scaffolded = join(work, "scaffolded");
    // The core is already built in the first app: start from its node_modules (npm keeps what
    // matches), so better-sqlite3 is not compiled a second time.
    cpSync(join(app, "node_modules"), join(scaffolded, "node_modules"), { recursive: true, verbatimSymlinks: true });
    ok(scaffolded, "npm", ["install", ...NPM_FLAGS, tarball]);
    const pkg = JSON.parse(readFileSync(join(scaffolded, "package.json"), "utf8")) as { dependencies: object };
    expect(Object.keys(pkg.dependencies).sort()).toEqual(["cairn", "zod"]);
    expect(ok(scaffolded, "npm", ["test"])).toMatch(/[#ℹ] pass 1\n/);
    ok(scaffolded, "npm", ["run", "typecheck"]);
    expect(ok(scaffolded, "npm", ["start"])).toContain("Hello, world!");
  });
});
