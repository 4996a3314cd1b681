#!/usr/bin/env node
// The `cairn` command. tsx is registered so that agent modules written in TypeScript load as
// they are; in a source checkout the CLI itself runs from src/ (never a stale build).
import { existsSync } from "node:fs";
import { register } from "tsx/esm/api";

register();
const source = new URL("../src/cli/main.ts", import.meta.url);
const built = new URL("../dist/cli/main.js", import.meta.url);
const { main } = await import(existsSync(source) ? source.href : built.href);
process.exitCode = await main(process.argv.slice(2));
