#!/usr/bin/env node
/**
 * The folder graph of src/ (docs/architecture.md): which folder may import which. Biome enforces it
 * (`npm run lint`): this script writes it into biome.json as one `noRestrictedImports` override per
 * folder, and `--check` says whether biome.json is up to date with it (a test runs that).
 *
 *   node scripts/layers.mjs          rewrite biome.json's layer overrides
 *   node scripts/layers.mjs --check  exit 1 when biome.json differs
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Each folder of src/ and the folders it may import from, bottom to top. */
export const LAYERS = {
  core: [],
  agent: ["core"],
  llm: ["core"],
  mcp: ["core"],
  sandbox: ["core"],
  backend: ["core"],
  api: ["core"],
  worker: ["core", "backend"],
  runtime: ["core", "backend", "worker", "agent", "llm", "mcp", "sandbox"],
  server: ["core", "backend", "worker", "runtime", "agent", "llm", "mcp", "sandbox", "api"],
  client: ["core", "api"],
  cli: ["core", "backend", "worker", "runtime", "agent", "llm", "mcp", "sandbox", "api", "server", "client"],
};

/** What core may not import: anything that does I/O (it takes I/O through its ports). */
const IO_MODULES = [
  "node:fs",
  "node:fs/promises",
  "node:child_process",
  "node:net",
  "node:http",
  "node:https",
  "node:dgram",
  "node:os",
  "pg",
  "better-sqlite3",
  "hono",
  "@hono/*",
  "@modelcontextprotocol/*",
  "@ai-sdk/*",
];

/** The overrides biome.json carries for the graph. */
export function layerOverrides() {
  const folders = Object.keys(LAYERS);
  return folders.map((folder) => {
    const banned = folders.filter((f) => f !== folder && !LAYERS[folder].includes(f));
    const patterns = [
      {
        group: banned.map((f) => `../**/${f}/**`),
        message: `${folder}/ may import only from ${[...LAYERS[folder], folder].join(", ")} (docs/architecture.md)`,
      },
    ];
    if (folder === "core") {
      patterns.push({
        group: IO_MODULES,
        message: "core/ does no I/O: it takes what it needs through a port (docs/architecture.md)",
      });
    }
    return {
      includes: [`src/${folder}/**`, "!**/*.test.ts"],
      linter: { rules: { style: { noRestrictedImports: { level: "error", options: { patterns } } } } },
    };
  });
}

/** Whether an override of biome.json is one of the graph's (it covers one folder of src/). */
function owned(override) {
  const first = override.includes?.[0];
  return Object.keys(LAYERS).some((folder) => first === `src/${folder}/**`);
}

const file = fileURLToPath(new URL("../biome.json", import.meta.url));

if (import.meta.url === `file://${process.argv[1]}`) {
  const config = JSON.parse(readFileSync(file, "utf8"));
  const others = (config.overrides ?? []).filter((o) => !owned(o));
  const wanted = [...others, ...layerOverrides()];
  if (process.argv.includes("--check")) {
    const same = JSON.stringify(config.overrides ?? []) === JSON.stringify(wanted);
    if (!same)
      console.error("biome.json's layer overrides differ from scripts/layers.mjs: run node scripts/layers.mjs");
    process.exit(same ? 0 : 1);
  }
  config.overrides = wanted;
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  // In the project's own format, so that `npm run lint` finds nothing to change.
  execFileSync(fileURLToPath(new URL("../node_modules/.bin/biome", import.meta.url)), ["format", "--write", file], {
    stdio: "ignore",
  });
}
