import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
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
});
