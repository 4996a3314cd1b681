#!/usr/bin/env node
/**
 * The commit convention (docs/architecture.md, "Commits"): a subject of at most 72 characters
 * that starts with a scope (`worker: hand back runs claimed during shutdown`), then, when there
 * is more to say, a blank line and a body with the why and the figures. Run by git as the
 * commit-msg hook (`.githooks/commit-msg`, installed by `npm install`); `checkCommitMessage` is
 * what a test checks.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** Longest subject line. */
export const MAX_SUBJECT = 72;

/** The problems of a commit message, none when it follows the convention. */
export function checkCommitMessage(message) {
  const lines = message
    .split("\n")
    .filter((line) => !line.startsWith("#"))
    .map((line) => line.replace(/\s+$/, ""));
  while (lines.length > 0 && lines[0] === "") lines.shift();
  const subject = lines[0] ?? "";
  // Merges and reverts that git writes, and fixups for a later rebase, pass as git makes them.
  if (/^(Merge |Revert "|fixup! |squash! )/.test(subject)) return [];
  const problems = [];
  if (subject === "") problems.push("the message is empty: write a subject line `scope: what changed`");
  if (subject.length > MAX_SUBJECT) {
    problems.push(
      `the subject is ${subject.length} characters, over ${MAX_SUBJECT}: keep it short and put the why and the figures in the body`,
    );
  }
  if (subject !== "" && !/^[a-z0-9][a-z0-9/.-]*: \S/.test(subject)) {
    problems.push(
      "the subject must start with a scope in lower case and a colon: `worker: …`, `postgres: …`, `docs: …`",
    );
  }
  if (lines.length > 1 && lines[1] !== "") problems.push("leave a blank line between the subject and the body");
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const file = process.argv[2];
  if (!file) {
    console.error("usage: commit-msg.mjs <file with the commit message>");
    process.exit(2);
  }
  const problems = checkCommitMessage(readFileSync(file, "utf8"));
  if (problems.length > 0) {
    console.error(`commit message refused:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.exit(1);
  }
}
