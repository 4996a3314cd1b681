import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { API_DIR, committedApi, renderApi } from "../scripts/docs-api.ts";
import { CLI_PAGE, HTTP_PAGE, openApiDocument, renderCli, renderHttp } from "../scripts/docs-reference.ts";
import { COMMANDS } from "../src/cli/main.ts";
import { repoRoot } from "./helpers/markdown-docs.ts";

/** The generated reference pages are what scripts/docs-reference.ts renders from the code now. */
describe("the generated reference", () => {
  const committed = (page: string) => readFileSync(join(repoRoot, page), "utf8");

  it("docs/reference/cli.md is up to date with the command definitions (npm run docs:reference)", async () => {
    const page = await renderCli();
    for (const command of COMMANDS) expect(page).toContain(`## cairn ${command.name}\n`);
    expect(committed(CLI_PAGE)).toBe(page);
  });

  it("docs/reference/http.md is up to date with the OpenAPI document (npm run docs:reference)", async () => {
    const doc = await openApiDocument();
    const page = await renderHttp(doc);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) expect(page).toContain(`## ${method.toUpperCase()} ${path}\n`);
    }
    expect(committed(HTTP_PAGE)).toBe(page);
  });

  it("docs/reference/api/ is what typedoc renders from the TSDoc now (npm run docs:reference)", () => {
    const pages = renderApi();
    // One page per package entry, each naming what it exports.
    expect(Object.keys(pages).sort()).toEqual(
      expect.arrayContaining(["README.md", "cairn.md", "cairn/postgres.md", "cairn/sqlite.md", "cairn/testing.md"]),
    );
    expect(pages["cairn.md"]).toContain("### Runtime");
    expect(pages["cairn/postgres.md"]).toContain("### PostgresBackend");
    const committed = committedApi();
    expect(Object.keys(committed).sort(), `${API_DIR}/ has other pages`).toEqual(Object.keys(pages).sort());
    for (const [page, text] of Object.entries(pages)) expect(committed[page], `${API_DIR}/${page}`).toBe(text);
  }, 120_000);
});
