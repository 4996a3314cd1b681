import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../src/sandbox.ts";
import { sandboxLifecycle } from "./helpers/sandbox-lifecycle.ts";

/** The local provider: the shared lifecycle, and what it says of itself (it isolates nothing). */

sandboxLifecycle("local", (dir) => new LocalSandboxProvider({ dir }));

describe("local: what it is", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("says it isolates nothing and enforces no limits; refuses a mount it cannot bind", async () => {
    const provider = new LocalSandboxProvider({ dir });
    expect(provider).toMatchObject({ kind: "local", isolated: false });
    const sandbox = await provider.create("what", { limits: { memoryBytes: 1 << 30 } });
    expect(sandbox.info).toMatchObject({ isolated: false, network: true, limits: {} });
    expect(sandbox.info.workspace).toBe(join(dir, sandbox.info.id));
    expect((await sandbox.exec("pwd")).tail).toBe(`${sandbox.info.workspace}\n`);
    await expect(provider.create("m", { mounts: [{ host: "/usr", path: "/opt/usr" }] })).rejects.toThrow(
      /binds nothing/,
    );
    const same = await provider.create("m", { mounts: [{ host: "/usr", path: "/usr" }] });
    expect(same.info.mounts).toEqual([{ host: "/usr", path: "/usr", readOnly: true }]);
    await sandbox.destroy();
    await same.destroy();
  });
});
