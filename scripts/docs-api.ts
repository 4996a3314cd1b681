/**
 * The API reference, docs/reference/api/: typedoc (typedoc.json) renders the TSDoc of every
 * package entry (`cairn`, `cairn/sqlite`, `cairn/postgres`, …) as Markdown, one page per entry.
 * `npm run docs:reference` writes it with the CLI and HTTP pages; test/docs-reference.test.ts
 * fails when the committed pages differ from what typedoc renders from the code now.
 *
 *   npm run docs:api                 write docs/reference/api/
 *   npm run docs:api -- --check      exit 1 if it is not up to date
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
/** Where the API reference lives, relative to the repository root. */
export const API_DIR = "docs/reference/api";

/** Every file under `dir`, by path relative to it (forward slashes), with its text. */
function readTree(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else files[relative(dir, path).split("\\").join("/")] = readFileSync(path, "utf8");
    }
  };
  try {
    walk(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return files;
}

/** The API reference as typedoc renders it from the code now, by path relative to {@link API_DIR}. */
export function renderApi(): Record<string, string> {
  const out = mkdtempSync(join(tmpdir(), "cairn-api-"));
  try {
    const typedoc = join(root, "node_modules", "typedoc", "bin", "typedoc");
    execFileSync(process.execPath, [typedoc, "--out", out, "--logLevel", "Error"], { cwd: root, stdio: "pipe" });
    return readTree(out);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The committed API reference, by path relative to {@link API_DIR}. */
export function committedApi(): Record<string, string> {
  return readTree(join(root, API_DIR));
}

/** Writes `pages` as the API reference, removing pages it no longer has. */
export function writeApi(pages: Record<string, string>): void {
  rmSync(join(root, API_DIR), { recursive: true, force: true });
  for (const [page, text] of Object.entries(pages)) {
    const path = join(root, API_DIR, page);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}

/** Whether the committed reference is what typedoc renders now; writes it unless `check`. */
export function updateApi(check: boolean): boolean {
  const pages = renderApi();
  const current = committedApi();
  const same =
    JSON.stringify(Object.keys(pages).sort()) === JSON.stringify(Object.keys(current).sort()) &&
    Object.entries(pages).every(([page, text]) => current[page] === text);
  if (same) return true;
  if (check) {
    console.error(`${API_DIR}/ is not up to date: run npm run docs:reference`);
    return false;
  }
  writeApi(pages);
  console.log(`wrote ${API_DIR}/ (${Object.keys(pages).length} pages)`);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = updateApi(process.argv.includes("--check")) ? 0 : 1;
}
