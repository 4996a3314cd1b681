#!/usr/bin/env node
/**
 * Points git at the repository's hooks (`.githooks/`: the commit convention) when this is a git
 * checkout whose hooks path is not set yet; anywhere else (a package installed from a tarball, a
 * checkout with hooks of its own) it does nothing. Run by `npm install` (`prepare`).
 */
import { execFileSync } from "node:child_process";

function git(...args) {
  return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
}

try {
  if (git("rev-parse", "--is-inside-work-tree") === "true") {
    let current = "";
    try {
      current = git("config", "--get", "core.hooksPath");
    } catch {
      // Not set.
    }
    if (current === "") git("config", "core.hooksPath", ".githooks");
  }
} catch {
  // Not a git checkout, or no git: nothing to install.
}
