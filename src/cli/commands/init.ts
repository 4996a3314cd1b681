import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { CliError, usageError } from "../cli-error.ts";
import type { Command } from "../command.ts";
import { displayPath } from "../format.ts";

/** `cairn init [dir]`: a new app with one agent, a test, and the scripts that run them. */
export const initCommand: Command = {
  name: "init",
  summary: "create a new app: one agent, a node:test test, npm start and npm test",
  usage: "cairn init [<dir>] [--name <package-name>]",
  details: [
    "<dir>   where to create the app (default: the current directory); it must be empty or absent",
    "--name  the app's package name (default: the directory's name)",
    "Writes package.json (scripts start, test, typecheck), tsconfig.json, src/agent.ts (one agent",
    "with one tool and one workflow) and test/agent.test.ts (node:test, with TestRuntime from",
    "cairn/testing). Then: cd <dir> && npm install && npm test && npm start.",
  ],
  positionals: [],
  variadic: true,
  options: { name: { type: "string" } },
  async run({ positionals, values }, io) {
    if (positionals.length > 1) throw usageError(`unexpected argument "${positionals[1]}"`);
    const dir = resolve(positionals[0] ?? ".");
    if (existsSync(dir) && readdirSync(dir).length > 0) {
      throw new CliError(`${displayPath(dir)} is not empty; give a new or empty directory: cairn init my-agent`);
    }
    const name = (values.name as string | undefined) ?? packageName(basename(dir));
    for (const [file, text] of Object.entries(scaffold(name, ownPackage()))) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const cd = positionals[0] === undefined ? "" : `cd ${positionals[0]} && `;
    io.out(`created ${name} in ${displayPath(dir)}: src/agent.ts, test/agent.test.ts`);
    io.out(`next: ${cd}npm install && npm test && npm start`);
    return 0;
  },
};

/** What `init` reads from cairn's own package.json: its version and the versions it was built with. */
interface OwnPackage {
  version: string;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

function ownPackage(): OwnPackage {
  // dist/cli/commands/init.js and src/cli/commands/init.ts are both three levels below package.json.
  const file = new URL("../../../package.json", import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")) as OwnPackage;
}

/** A directory name as an npm package name. */
function packageName(dir: string): string {
  const name = dir
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+/, "");
  return name === "" ? "my-agent" : name;
}

/** The files of a new app, by path. */
export function scaffold(name: string, own: OwnPackage): Record<string, string> {
  const caret = (dependency: string) => `^${(own.devDependencies[dependency] ?? "*").replace(/^[\^~]/, "")}`;
  const pkg = {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: `cairn run src/agent.ts greeter greet --input '{"name":"world"}'`,
      test: "node --import tsx --test test/agent.test.ts",
      typecheck: "tsc --noEmit",
    },
    dependencies: { cairn: `^${own.version}`, zod: own.peerDependencies.zod ?? "^4.0.0" },
    devDependencies: { "@types/node": caret("@types/node"), tsx: caret("tsx"), typescript: caret("typescript") },
  };
  return {
    "package.json": `${JSON.stringify(pkg, null, 2)}\n`,
    "tsconfig.json": `${JSON.stringify(TSCONFIG, null, 2)}\n`,
    ".gitignore": "node_modules\n.cairn\n",
    "src/agent.ts": AGENT,
    "test/agent.test.ts": TEST,
  };
}

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: ["node"],
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    skipLibCheck: false,
  },
  include: ["src", "test"],
};

const AGENT = `import { defineAgent, defineTool } from "cairn";
import { z } from "zod";

/**
 * One agent with one tool and one workflow. Each tool call is a checkpointed step: a run that
 * loses its process continues from its last finished step (\`npx cairn resume <runId>\`).
 */
export const greeter = defineAgent({
  name: "greeter",
  tools: {
    compose: defineTool({
      input: z.object({ name: z.string().min(1) }),
      run: (_ctx, { name }) => ({ text: \`Hello, \${name}!\` }),
    }),
  },
  workflows: {
    async greet(ctx, { name }: { name: string }) {
      const greeting = await ctx.tool("compose", { name }); // a checkpoint
      return greeting.text;
    },
  },
  inputs: { greet: z.object({ name: z.string() }) },
});
`;

const TEST = `import assert from "node:assert/strict";
import { test } from "node:test";
import { TestRuntime } from "cairn/testing";
import { greeter } from "../src/agent.ts";

test("greet says hello", async () => {
  const t = new TestRuntime({ agents: [greeter] });
  const run = await t.run(greeter, "greet", { name: "Ada" });
  assert.equal(await run.result(), "Hello, Ada!");
  await t.shutdown();
});
`;
