import { existsSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { allRelativeLinks, relativeLinks, repoRoot } from "./helpers/markdown-docs.ts";

/**
 * Every relative link and image of README.md and docs/ points at a file or folder of the
 * repository.
 */

/**
 * Guides being written on other branches at the time of writing, linked from the README and
 * docs/README.md ahead of their merge. Remove this list once they are on main: a link to one of
 * them that still does not resolve then fails like any other.
 */
const EXPECTED_SOON = new Set([
  "docs/guides/sandboxes.md",
  "docs/guides/coding-session.md",
  "docs/guides/moving-runs.md",
  "docs/guides/fork-and-replay.md",
  "docs/guides/performance.md",
]);

describe("the documentation's links", () => {
  it("resolve to files of the repository", () => {
    const links = allRelativeLinks();
    expect(links.length).toBeGreaterThan(50);
    const broken: string[] = [];
    const soon = new Set<string>();
    for (const link of links) {
      const target = normalize(join(dirname(link.file), decodeURIComponent(link.target)));
      if (existsSync(join(repoRoot, target))) continue;
      if (EXPECTED_SOON.has(target)) soon.add(target);
      else broken.push(`${link.file}:${link.line}: ${link.target}`);
    }
    console.log(`docs links: ${links.length} relative links checked; not yet on this branch: ${[...soon].join(", ")}`);
    expect(broken).toEqual([]);
  });

  it("finds links and images, and leaves URLs, anchors and code alone", () => {
    const text = [
      "See [a guide](guides/a.md#part) and ![a picture](pic.png).",
      "Not these: [site](https://example.com), [here](#anchor), `[code](x.md)`.",
      "```",
      "[in a block](y.md)",
      "```",
    ].join("\n");
    expect(relativeLinks("docs/README.md", text).map((l) => [l.line, l.target])).toEqual([
      [1, "guides/a.md"],
      [1, "pic.png"],
    ]);
  });
});
