import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError, SandboxLostError } from "../../src/core/errors.ts";
import type { ExecResult, Sandbox, SandboxProvider } from "../../src/core/sandbox.ts";
import { sleepMarker, sleepPids, waitUntil } from "./sandbox-processes.ts";

/** Makes a provider on the folder `dir` (a second call on one dir is another process's view). */
export type MakeProvider = (dir: string) => SandboxProvider;

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/**
 * The lifecycle every provider keeps, whatever it isolates: create-by-label, find from another
 * instance, exec's output, files, snapshots, loss and destroy. Run against each provider.
 */
export function sandboxLifecycle(kind: string, make: MakeProvider): void {
  let root = "";
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), `cairn-sbx-${kind}-`));
    // Enterable by the user bubblewrap runs as when the tests run as root.
    chmodSync(root, 0o711);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const fresh = () => {
    const dir = join(root, `p${++n}`);
    return { dir, provider: make(dir) };
  };

  describe(`${kind}: create and find by label`, () => {
    it("create is idempotent by label, and a new instance on the same folder finds it", async () => {
      const { dir, provider } = fresh();
      const a = await provider.create("run-1/build", { env: { A: "1" } });
      const again = await provider.create("run-1/build", { env: { A: "1" } });
      const other = await provider.create("run-1/test", {});
      expect(again.info.id).toBe(a.info.id);
      expect(other.info.id).not.toBe(a.info.id);
      expect(a.info).toMatchObject({ label: "run-1/build", kind });
      await a.writeFile("kept.txt", "from the first instance");
      const later = make(dir);
      const found = await later.find("run-1/build");
      expect(found?.info).toEqual(a.info);
      expect(text(await (found as Sandbox).readFile("kept.txt"))).toBe("from the first instance");
      expect((await later.create("run-1/build", { env: { A: "1" } })).info.id).toBe(a.info.id);
      expect(await later.find("run-2/none")).toBeUndefined();
      expect((await later.list()).map((i) => i.id).sort()).toEqual([a.info.id, other.info.id].sort());
    });

    it("two instances creating one label at once get one sandbox", async () => {
      const { dir, provider } = fresh();
      const [x, y] = await Promise.all([provider.create("same", {}), make(dir).create("same", {})]);
      expect(x.info.id).toBe(y.info.id);
      expect(await make(dir).list()).toHaveLength(1);
    });

    it("a label held with another network or limits is refused; a new env replaces the old", async () => {
      const { provider } = fresh();
      const a = await provider.create("l", { env: { V: "old" } });
      await expect(provider.create("l", { network: true })).rejects.toThrow(/another network/);
      const b = await provider.create("l", { env: { V: "new" } });
      expect(b.info.id).toBe(a.info.id);
      expect((await b.exec("echo $V")).tail).toBe("new\n");
    });

    it("a bad label or spec is refused before anything is made", async () => {
      const { dir, provider } = fresh();
      await expect(provider.create("", {})).rejects.toBeInstanceOf(InvalidInputError);
      await expect(provider.create("x", { env: { "A-B": "1" } })).rejects.toThrow(/not a variable name/);
      await expect(provider.create("x", { limits: { memoryBytes: -1 } })).rejects.toThrow(/positive whole number/);
      expect(existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith("sbx-")) : []).toEqual([]);
    });
  });

  describe(`${kind}: exec`, () => {
    it("gives the exit code, the tail of both streams, the byte count, streams chunks and writes the log", async () => {
      const { dir, provider } = fresh();
      const sandbox = await provider.create("exec", {});
      const chunks: { stream: string; text: string }[] = [];
      const logPath = join(dir, "logs", "1.log");
      const result = await sandbox.exec("printf 'one\\ntwo\\n'; echo oops >&2; exit 3", {
        logPath,
        onOutput: (c) => chunks.push(c),
      });
      expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false, outputBytes: 13 });
      expect(result.tail).toContain("one\ntwo\n");
      expect(result.tail).toContain("oops\n");
      expect(
        chunks
          .filter((c) => c.stream === "stdout")
          .map((c) => c.text)
          .join(""),
      ).toBe("one\ntwo\n");
      expect(
        chunks
          .filter((c) => c.stream === "stderr")
          .map((c) => c.text)
          .join(""),
      ).toBe("oops\n");
      const log = readFileSync(logPath, "utf8");
      expect(log).toContain("one\ntwo\n");
      expect(log).toContain("oops\n");
      expect((await sandbox.exec(["sh", "-c", 'printf "%s|" "$@"', "sh", "a b", "c"])).tail).toBe("a b|c|");
      expect((await sandbox.exec("cat", { stdin: "fed in" })).tail).toBe("fed in");
    });

    it("keeps a few kilobytes of a long output as the tail, starting at a whole line", async () => {
      const sandbox = await fresh().provider.create("long", {});
      const result = await sandbox.exec("seq 1 200000");
      expect(result.exitCode).toBe(0);
      expect(result.outputBytes).toBe(1_288_895);
      expect(result.tail.length).toBeLessThanOrEqual(4096);
      expect(result.tail.endsWith("199999\n200000\n")).toBe(true);
      expect(result.tail.split("\n")[0]).toMatch(/^\d{6}$/);
    });

    it("passes only the spec's and the call's environment, never the host's", async () => {
      process.env.CAIRN_SECRET_PROBE = "host-secret";
      try {
        const sandbox = await fresh().provider.create("env", { env: { FROM_SPEC: "s", BOTH: "spec" } });
        const { tail } = await sandbox.exec("env", { env: { FROM_CALL: "c", BOTH: "call" } });
        expect(tail).not.toContain("CAIRN_SECRET_PROBE");
        expect(tail).not.toContain("host-secret");
        const vars = Object.fromEntries(
          tail
            .trim()
            .split("\n")
            .map((l) => l.split(/=(.*)/s).slice(0, 2)),
        );
        expect(vars).toMatchObject({ FROM_SPEC: "s", FROM_CALL: "c", BOTH: "call" });
        const extra = Object.keys(vars).filter(
          (k) => !["FROM_SPEC", "FROM_CALL", "BOTH", "PATH", "HOME", "PWD"].includes(k),
        );
        expect(extra).toEqual([]);
      } finally {
        delete process.env.CAIRN_SECRET_PROBE;
      }
    });

    it("runs in a folder of the workspace given as cwd; refuses one outside", async () => {
      const sandbox = await fresh().provider.create("cwd", {});
      await sandbox.writeFile("sub/dir/f.txt", "x");
      expect((await sandbox.exec("ls", { cwd: "sub/dir" })).tail).toBe("f.txt\n");
      await expect(sandbox.exec("ls", { cwd: "../.." })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(sandbox.exec("ls", { cwd: "nope" })).rejects.toThrow(/does not exist/);
      await expect(sandbox.exec("true", { timeoutMs: Number.NaN })).rejects.toThrow(/positive number/);
      await expect(sandbox.exec([])).rejects.toBeInstanceOf(InvalidInputError);
    });

    it("kills the whole process tree on timeout and on abort, leaving no process", async () => {
      const sandbox = await fresh().provider.create("kill", {});
      for (const how of ["timeout", "abort"] as const) {
        const [m1, m2] = [sleepMarker(), sleepMarker()];
        const controller = new AbortController();
        const running = sandbox.exec(`sleep ${m1} & sleep ${m2} & wait`, {
          ...(how === "timeout" ? { timeoutMs: 1500 } : { signal: controller.signal }),
        });
        await waitUntil(() => sleepPids(m1).length + sleepPids(m2).length === 2, 10_000, "both sleeps");
        const pids = [...sleepPids(m1), ...sleepPids(m2)];
        if (how === "abort") controller.abort();
        const result = await running;
        expect(result).toMatchObject(how === "timeout" ? { timedOut: true, aborted: false } : { aborted: true });
        await waitUntil(() => pids.every((pid) => !alive(pid)), 5000, `the sleeps to end (${how})`);
        expect([...sleepPids(m1), ...sleepPids(m2)]).toEqual([]);
      }
    });
    it("ends a command's background processes with it", async () => {
      const sandbox = await fresh().provider.create("background", {});
      const marker = sleepMarker();
      const result = await sandbox.exec(`sleep ${marker} > /dev/null 2>&1 & echo started`);
      expect(result).toMatchObject({ exitCode: 0, tail: "started\n" });
      await waitUntil(() => sleepPids(marker).length === 0, 5000, "the background sleep to end");
    });
  });

  describe(`${kind}: files`, () => {
    it("writes and reads files of the workspace, making folders", async () => {
      const sandbox = await fresh().provider.create("files", {});
      await sandbox.writeFile("a/b/c.txt", "hello");
      await sandbox.writeFile("bin.dat", new Uint8Array([0, 255, 1]));
      expect(text(await sandbox.readFile("a/b/c.txt"))).toBe("hello");
      expect([...(await sandbox.readFile("./bin.dat"))]).toEqual([0, 255, 1]);
      expect((await sandbox.exec("cat a/b/c.txt && echo ' more' >> a/b/c.txt && touch a/b/new")).tail).toBe("hello");
      expect(text(await sandbox.readFile("a/b/c.txt"))).toBe("hello more\n");
    });

    it("refuses paths out of the workspace: .., absolute, and symbolic links that escape", async () => {
      const { dir, provider } = fresh();
      const sandbox = await provider.create("escape", {});
      await sandbox.exec("ln -s /etc etc-link && ln -s /etc/hostname host-link && ln -s .. up");
      for (const path of ["../x", "a/../../x", "/etc/hostname", "etc-link/hostname", "host-link", "up/x"]) {
        await expect(sandbox.readFile(path), path).rejects.toBeInstanceOf(InvalidInputError);
      }
      for (const path of ["../outside.txt", "/tmp/outside.txt", "etc-link/x.txt", "up/outside.txt", "host-link"]) {
        await expect(sandbox.writeFile(path, "no"), path).rejects.toBeInstanceOf(InvalidInputError);
      }
      expect(existsSync(join(dir, "outside.txt"))).toBe(false);
    });
  });

  describe(`${kind}: snapshots`, () => {
    it("restores a snapshot, and stores one content once", async () => {
      const { dir, provider } = fresh();
      const sandbox = await provider.create("snap", {});
      await sandbox.writeFile("src/main.txt", "version 1");
      await sandbox.exec("mkdir -p empty && chmod 700 src && ln -s src/main.txt link");
      const first = await sandbox.snapshot();
      expect(first.id).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect((await sandbox.snapshot()).id).toBe(first.id);
      expect(readdirSync(join(dir, "snapshots"))).toHaveLength(1);
      await sandbox.writeFile("src/main.txt", "version 2");
      await sandbox.writeFile("added.txt", "later");
      const second = await sandbox.snapshot();
      expect(second.id).not.toBe(first.id);
      await sandbox.restore(first.id);
      expect(text(await sandbox.readFile("src/main.txt"))).toBe("version 1");
      expect(text(await sandbox.readFile("link"))).toBe("version 1");
      await expect(sandbox.readFile("added.txt")).rejects.toThrow(/does not exist/);
      expect((await sandbox.exec("stat -c %a src; ls -d empty")).tail).toBe("700\nempty\n");
      expect((await sandbox.snapshot()).id).toBe(first.id);
      expect(readdirSync(join(dir, "snapshots"))).toHaveLength(2);
      // The restored files are the sandbox's own: its commands may change them.
      expect((await sandbox.exec("echo more >> src/main.txt && cat src/main.txt")).tail).toBe("version 1more\n");
      const other = await provider.create("snap-copy", {});
      await other.restore(second.id);
      expect(text(await other.readFile("added.txt"))).toBe("later");
      await expect(sandbox.restore(`sha256:${"0".repeat(64)}`)).rejects.toThrow(/no snapshot/);
      await expect(sandbox.restore("latest")).rejects.toBeInstanceOf(InvalidInputError);
    });
  });

  describe(`${kind}: loss and destroy`, () => {
    it("is lost when its folder is removed; a new create of the label replaces it and takes the snapshot", async () => {
      const { dir, provider } = fresh();
      const sandbox = await provider.create("lose", {});
      await sandbox.writeFile("work.txt", "saved");
      const { id: snap } = await sandbox.snapshot();
      rmSync(join(dir, sandbox.info.id), { recursive: true, force: true });
      expect(await sandbox.status()).toBe("lost");
      await expect(sandbox.exec("true")).rejects.toBeInstanceOf(SandboxLostError);
      expect((await make(dir).find("lose"))?.info.id).toBe(sandbox.info.id);
      const rebuilt = await make(dir).create("lose", {});
      expect(rebuilt.info.id).not.toBe(sandbox.info.id);
      expect(await sandbox.status()).toBe("destroyed");
      await rebuilt.restore(snap);
      expect(text(await rebuilt.readFile("work.txt"))).toBe("saved");
      expect((await provider.find("lose"))?.info.id).toBe(rebuilt.info.id);
    });

    it("destroy from another instance kills a running command and removes the workspace", async () => {
      const { dir, provider } = fresh();
      const sandbox = await provider.create("doomed", {});
      const marker = sleepMarker();
      const running = sandbox.exec(`sleep ${marker} & wait`);
      await waitUntil(() => sleepPids(marker).length === 1, 10_000, "the sleep");
      const [pid] = sleepPids(marker);
      await (await make(dir).find("doomed"))?.destroy();
      const result: ExecResult = await running;
      expect(result.exitCode === 0).toBe(false);
      await waitUntil(() => !alive(pid as number), 5000, "the sleep to end");
      expect(sleepPids(marker)).toEqual([]);
      expect(existsSync(join(dir, sandbox.info.id))).toBe(false);
      expect(await sandbox.status()).toBe("destroyed");
      await expect(sandbox.exec("true")).rejects.toThrow(/was destroyed/);
      expect(await provider.find("doomed")).toBeUndefined();
      expect(await provider.list()).toEqual([]);
      await sandbox.destroy();
      expect((await provider.create("doomed", {})).info.id).not.toBe(sandbox.info.id);
    });
  });
}

/** Whether a process runs (a zombie, already ended but not reaped, counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return false;
  }
}
