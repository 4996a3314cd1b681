import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The user documentation as the docs tests read it: README.md and every .md file under docs/,
 * their fenced code blocks and their relative links.
 */

/** The repository's root folder. */
export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/** A fenced code block of a Markdown file. */
export interface CodeBlock {
  /** The file, relative to the repository root. */
  file: string;
  /** The 1-based line of the block's first line of code. */
  line: number;
  /** The info string's first word (`ts`, `sh`, …), lower-cased; "" when there is none. */
  lang: string;
  code: string;
  /** The reason of a `<!-- not-checked: reason -->` comment just before the fence. */
  notChecked?: string;
  /**
   * The file name of a `<!-- file: name.ts -->` comment just before the fence: the block is that
   * module, which the other blocks of the same page may import (`./name.ts`).
   */
  fileName?: string;
}

/** A Markdown link or image whose target is a path in the repository (not a URL, not `#anchor`). */
export interface RelativeLink {
  file: string;
  line: number;
  /** The target as written, without its `#fragment`; "" for a link within the page (`#part`). */
  target: string;
  /** The `#fragment`, without the `#`, when there is one. */
  fragment?: string;
}

/** README.md and every Markdown file under docs/, relative to the repository root, sorted. */
export function docFiles(root = repoRoot): string[] {
  const files = ["README.md"];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".md")) files.push(path);
    }
  };
  walk("docs");
  return files.sort();
}

/**
 * The API reference typedoc generates from the TSDoc (`npm run docs:api`): its links are checked
 * with the others, but its code blocks are the TSDoc `@example` fragments of the source, shown
 * as written there, so the code tests read only the pages written by hand.
 */
export const GENERATED_API = "docs/reference/api/";

/** The pages written by hand: {@link docFiles} without the generated API reference. */
export function writtenDocFiles(root = repoRoot): string[] {
  return docFiles(root).filter((file) => !file.startsWith(GENERATED_API));
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/;
const NOT_CHECKED = /^<!--\s*not-checked:\s*(.+?)\s*-->$/;
const FILE_NAME = /^<!--\s*file:\s*([\w.-]+\.ts)\s*-->$/;

/** The fenced code blocks of one Markdown text. */
export function codeBlocks(file: string, text: string): CodeBlock[] {
  const lines = text.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? "");
    if (!open) continue;
    const [, indent = "", fence = "", lang = ""] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j] ?? "";
      if (line.trim().startsWith(fence) && line.trim().replaceAll(fence[0] ?? "`", "") === "") break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line);
    }
    const comments = commentsBefore(lines, i);
    const notChecked = comments.map((c) => NOT_CHECKED.exec(c)?.[1]).find((m) => m !== undefined);
    const fileName = comments.map((c) => FILE_NAME.exec(c)?.[1]).find((m) => m !== undefined);
    blocks.push({
      file,
      line: i + 2,
      lang: lang.toLowerCase(),
      code: body.join("\n"),
      ...(notChecked ? { notChecked } : {}),
      ...(fileName ? { fileName } : {}),
    });
    i = j;
  }
  return blocks;
}

/** The HTML comment lines right before line `index` (blank lines between them allowed). */
function commentsBefore(lines: readonly string[], index: number): string[] {
  const comments: string[] = [];
  for (let k = index - 1; k >= 0; k--) {
    const line = (lines[k] ?? "").trim();
    if (line === "") continue;
    if (!line.startsWith("<!--")) break;
    comments.push(line);
  }
  return comments;
}

const LINK = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;

/** The relative links of one Markdown text, outside code blocks and inline code. */
export function relativeLinks(file: string, text: string): RelativeLink[] {
  const links: RelativeLink[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, index) => {
    const open = FENCE.exec(line);
    if (open) {
      const mark = open[2] ?? "";
      if (fence === undefined) fence = mark;
      else if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    for (const match of line.replaceAll(/`[^`]*`/g, "").matchAll(LINK)) {
      const [target = "", fragment] = (match[1] ?? "").split("#");
      if ((target === "" && !fragment) || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push({ file, line: index + 1, target, ...(fragment ? { fragment } : {}) });
    }
  });
  return links;
}

/** The anchors of a Markdown text's headings, as GitHub makes them (`## Run it` → `run-it`). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const open = FENCE.exec(line);
    if (open) {
      if (fence === undefined) fence = open[2] ?? "";
      else if (line.trim().startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    // An HTML anchor (`<a id="…"></a>`, as the API reference's generator writes) is a target too.
    for (const html of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(html[1] ?? "");
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = (heading[1] ?? "")
      .toLowerCase()
      .replaceAll(/[^\p{L}\p{N}\s_-]/gu, "")
      .replaceAll(" ", "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The inline code spans of a Markdown text, outside code blocks. */
export function inlineCode(file: string, text: string): { file: string; line: number; code: string }[] {
  const spans: { file: string; line: number; code: string }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, index) => {
    const open = FENCE.exec(line);
    if (open) {
      if (fence === undefined) fence = open[2] ?? "";
      else if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    for (const match of line.matchAll(/`([^`]+)`/g)) spans.push({ file, line: index + 1, code: match[1] ?? "" });
  });
  return spans;
}

/** Every code block of the documentation. */
export function allCodeBlocks(root = repoRoot): CodeBlock[] {
  return writtenDocFiles(root).flatMap((file) => codeBlocks(file, readFileSync(join(root, file), "utf8")));
}

/** Every relative link of the documentation. */
export function allRelativeLinks(root = repoRoot): RelativeLink[] {
  return docFiles(root).flatMap((file) => relativeLinks(file, readFileSync(join(root, file), "utf8")));
}

/** `path` relative to the repository root, with forward slashes. */
export function fromRoot(path: string, root = repoRoot): string {
  return relative(root, path).split("\\").join("/");
}
