import { chmodSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPullRequest, listPullRequests } from "../examples/coding-session/forge-client.ts";
import { acceptBundle, branchSha, git } from "../examples/coding-session/git-remote.ts";
import {
  checkpointSha,
  commitScript,
  prepareScript,
  REPO,
  rebuildScript,
  sessionSandboxSpec,
} from "../examples/coding-session/workspace.ts";
import { makeRoot, makeWorld, provider, sandboxKind, type World } from "./coding-session/fixture.ts";

/**
 * The coding session's parts below the workflow: the forge (one pull request per key and per
 * branch, a lost answer) and the workspace scripts run in a real sandbox (bubblewrap where it
 * works): clone through the read-only mount, commit, hand a bundle out, fetch it into the remote
 * on the host, rebuild from the pushed commit.
 */

const root = makeRoot("cairn-cs-parts-");
let world: World;
let kind: "bubblewrap" | "local";
beforeAll(async () => {
  kind = await sandboxKind();
  world = await makeWorld(root, "w");
});
afterAll(async () => {
  await world.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the forge", () => {
  it("opens one pull request per key and per branch, and lists them by head", async () => {
    await git(["--git-dir", world.remote, "branch", "agent/a", "main"]);
    const draft = { head: "agent/a", base: "main", title: "A", body: "", key: "k-a" };
    const first = await createPullRequest(world.forge.url, draft);
    expect(first).toMatchObject({ number: 1, head: "agent/a", headSha: world.baseSha, key: "k-a" });
    expect(await createPullRequest(world.forge.url, draft)).toEqual(first);
    // Another key, same branch: the open one comes back, no second is made.
    expect(await createPullRequest(world.forge.url, { ...draft, key: "k-other" })).toEqual(first);
    expect(await listPullRequests(world.forge.url, "agent/a")).toEqual([first]);
    expect(await listPullRequests(world.forge.url, "agent/none")).toEqual([]);
    await expect(createPullRequest(world.forge.url, { ...draft, head: "agent/none", key: "k-n" })).rejects.toThrow(
      /no branch agent\/none/,
    );
  });

  it("a dropped answer: the pull request was made, the caller sees a cut connection", async () => {
    await git(["--git-dir", world.remote, "branch", "agent/b", "main"]);
    world.forge.dropCreateResponses(1);
    const draft = { head: "agent/b", base: "main", title: "B", body: "", key: "k-b" };
    await expect(createPullRequest(world.forge.url, draft)).rejects.toThrow();
    const [made] = await listPullRequests(world.forge.url, "agent/b");
    expect(made).toMatchObject({ head: "agent/b", key: "k-b" });
    expect(await createPullRequest(world.forge.url, draft)).toEqual(made);
    expect(world.forge.pulls().filter((p) => p.head === "agent/b")).toHaveLength(1);
  });
});

describe("the workspace scripts in a sandbox", () => {
  it("prepare, commit, hand out a bundle, push it on the host, rebuild from it", { timeout: 60_000 }, async () => {
    const sandboxes = provider(kind, world.sandboxes);
    const outbox = join(world.dir, "outbox");
    mkdirSync(outbox);
    chmodSync(outbox, 0o777);
    const spec = sessionSandboxSpec({ remote: world.remote, outbox });
    const sandbox = await sandboxes.create("parts/workspace", spec);
    const branch = "agent/parts";
    const prepared = await sandbox.exec(prepareScript({ remote: world.remote, base: "main", branch }));
    expect(prepared.exitCode, prepared.tail).toBe(0);
    expect(prepared.tail).toMatch(/setup: node v\d+/);

    await sandbox.writeFile(`${REPO}/NOTES.md`, "notes\n");
    const commit = commitScript({ branch, last: world.baseSha, outbox });
    const committed = await sandbox.exec(commit, { cwd: REPO, stdin: "turn 1: notes\n" });
    expect(committed.exitCode, committed.tail).toBe(0);
    const sha = checkpointSha(committed.tail);
    expect(sha).not.toBe(world.baseSha);
    // Again: nothing more to commit, the same commit reported.
    expect(checkpointSha((await sandbox.exec(commit, { cwd: REPO, stdin: "again\n" })).tail)).toBe(sha);

    expect(await branchSha(world.remote, branch)).toBeUndefined();
    await acceptBundle(world.remote, join(outbox, `${sha}.bundle`), branch, sha);
    expect(await branchSha(world.remote, branch)).toBe(sha);
    await acceptBundle(world.remote, join(outbox, `${sha}.bundle`), branch, sha);

    // The sandbox cannot write the remote: it is bound read-only (bubblewrap), and it has no network.
    if (kind === "bubblewrap") {
      const push = await sandbox.exec(`git push --quiet ${world.remote} HEAD:refs/heads/sneaky`, { cwd: REPO });
      expect(push.exitCode).not.toBe(0);
      expect(await branchSha(world.remote, "sneaky")).toBeUndefined();
      const net = await sandbox.exec("git ls-remote https://github.com/git/git 2>&1", { cwd: REPO });
      expect(net.exitCode).not.toBe(0);
    }

    await sandbox.destroy();
    const again = await sandboxes.create("parts/workspace-2", spec);
    const rebuilt = await again.exec(rebuildScript({ remote: world.remote, branch, sha }));
    expect(rebuilt.exitCode, rebuilt.tail).toBe(0);
    expect(new TextDecoder().decode(await again.readFile(`${REPO}/NOTES.md`))).toBe("notes\n");
    expect((await again.exec("git rev-parse HEAD && git branch --show-current", { cwd: REPO })).tail).toBe(
      `${sha}\n${branch}\n`,
    );
    await again.destroy();
    expect(existsSync(join(world.sandboxes, again.info.id))).toBe(false);
  });
});
