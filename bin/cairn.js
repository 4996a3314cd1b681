#!/usr/bin/env node
// The `cairn` command. When tsx is installed (an optional peer dependency of cairn) it is
// registered so that agent modules written in TypeScript load as they are; without it, .js
// modules load and a .ts module fails with a message that says `npm install -D tsx`. In a source
// checkout the CLI itself runs from src/ (never a stale build), which needs tsx (a dev dependency).
import { existsSync } from "node:fs";

let typescript = false;
try {
  const { register } = await import("tsx/esm/api");
  register();
  typescript = true;
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND") throw error;
}
const source = new URL("../src/cli/main.ts", import.meta.url);
const built = new URL("../dist/cli/main.js", import.meta.url);
const { main } = await import(typescript && existsSync(source) ? source.href : built.href);
process.exitCode = await main(process.argv.slice(2));
