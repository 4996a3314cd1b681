import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { allRelativeLinks, headingAnchors, relativeLinks, repoRoot } from "./helpers/markdown-docs.ts";

/**
 * Every relative link and image of README.md and docs/ points at a file or folder of the
 * repository, and a `#fragment` into a Markdown page at one of its headings.
 */

/**
 * Guides being written on other branches at the time of writing, linked from the README and
 * docs/README.md ahead of their merge. Remove this list once they are on main: a link to one of
 * them that still does not resolve then fails like any other.
 */
const EXPECTED_SOON = new Set<string>([]);

describe("the documentation's links", () => {
  it("resolve to files of the repository", () => {
    const links = allRelativeLinks();
    expect(links.length).toBeGreaterThan(50);
    const broken: string[] = [];
    const soon = new Set<string>();
    const anchors = new Map<string, Set<string>>();
    const anchorsOf = (page: string) => {
      const known = anchors.get(page) ?? headingAnchors(readFileSync(join(repoRoot, page), "utf8"));
      anchors.set(page, known);
      return known;
    };
    let fragments = 0;
    for (const link of links) {
      const target =
        link.target === "" ? link.file : normalize(join(dirname(link.file), decodeURIComponent(link.target)));
      if (!existsSync(join(repoRoot, target))) {
        if (EXPECTED_SOON.has(target)) soon.add(target);
        else broken.push(`${link.file}:${link.line}: ${link.target}`);
      } else if (link.fragment !== undefined && target.endsWith(".md")) {
        fragments++;
        if (!anchorsOf(target).has(link.fragment)) {
          broken.push(`${link.file}:${link.line}: ${link.target}#${link.fragment} (no such heading)`);
        }
      }
    }
    console.log(
      `docs links: ${links.length} relative links checked, ${fragments} of them to a heading; ` +
        `not yet on this branch: ${[...soon].join(", ") || "none"}`,
    );
    expect(broken).toEqual([]);
  });

  it("finds links and images, and leaves URLs, anchors and code alone", () => {
    const text = [
      "See [a guide](guides/a.md#part) and ![a picture](pic.png).",
      "Not these: [site](https://example.com), `[code](x.md)`; this one: [here](#anchor).",
      "```",
      "[in a block](y.md)",
      "```",
    ].join("\n");
    expect(relativeLinks("docs/README.md", text).map((l) => [l.line, l.target, l.fragment])).toEqual([
      [1, "guides/a.md", "part"],
      [1, "pic.png", undefined],
      [2, "", "anchor"],
    ]);
  });

  it("makes the anchors GitHub makes", () => {
    const text =
      "# Cairn\n## Run it: from code\n```\n# not a heading\n```\n## Run it: from code\n### GET /api/runs/{id}";
    expect([...headingAnchors(text)]).toEqual(["cairn", "run-it-from-code", "run-it-from-code-1", "get-apirunsid"]);
  });
});
