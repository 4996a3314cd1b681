import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BubblewrapProvider } from "../src/sandbox.ts";
import { alive, sandboxLifecycle } from "./helpers/sandbox-lifecycle.ts";
import { sleepMarker, sleepPids, waitUntil } from "./helpers/sandbox-processes.ts";

/**
 * The bubblewrap provider: the shared lifecycle, and the isolation it promises, each shown by a
 * command that would succeed without it (CI installs bubblewrap; without it these tests skip and
 * say why).
 */

const probe = mkdtempSync(join(tmpdir(), "cairn-bwrap-probe-"));
chmodSync(probe, 0o711);
const skip = await BubblewrapProvider.unavailable({ dir: probe });
rmSync(probe, { recursive: true, force: true });
if (skip) console.warn(`bubblewrap sandbox tests skipped: ${skip}`);

let root = "";
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "cairn-bwrap-"));
  chmodSync(root, 0o711);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const provider = () => new BubblewrapProvider({ dir: join(root, `p${++n}`) });
const WORKER = join(import.meta.dirname, "sandbox", "sleeping-worker.ts");

describe.skipIf(skip !== undefined)("bubblewrap", () => {
  sandboxLifecycle("bubblewrap", (dir) => new BubblewrapProvider({ dir }));

  describe("network", () => {
    let server: Server;
    let port = 0;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections++;
        socket.end("hello\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    const connect = () => `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3'`;

    it("cannot reach a server on the host's loopback without network: true", async () => {
      const sandbox = await provider().create("offline", {});
      const result = await sandbox.exec(connect(), { timeoutMs: 10_000 });
      expect(result.exitCode).not.toBe(0);
      expect(result.tail).toMatch(/refused|unreachable/i);
      expect(result.tail).not.toContain("hello");
      expect((await sandbox.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")).tail).toBe("lo\n");
      expect(connections).toBe(0);
    });

    it("reaches it with network: true", async () => {
      const sandbox = await provider().create("online", { network: true });
      const result = await sandbox.exec(connect(), { timeoutMs: 10_000 });
      expect(result).toMatchObject({ exitCode: 0, tail: "hello\n" });
      expect(connections).toBe(1);
    });
  });

  it("cannot write outside its workspace: the host's /tmp, the test's folder, /etc, /usr, the sandboxes' folder", async () => {
    const p = provider();
    const sandbox = await p.create("writes", {});
    const name = `cairn-probe-${process.pid}`;
    const targets = [join(tmpdir(), name), join(import.meta.dirname, name), `/etc/${name}`, `/usr/${name}`];
    targets.push(join(root, name), join(root, `p${n}`, name), `${process.env.HOME ?? "/root"}/${name}`);
    for (const target of targets) {
      await sandbox.exec(`echo escaped > '${target}'`);
      expect(existsSync(target), target).toBe(false);
    }
    expect((await sandbox.exec(`echo kept > /workspace/${name} && echo ok`)).tail).toBe("ok\n");
    expect(existsSync(join(root, `p${n}`, sandbox.info.id, name))).toBe(true);
    const probe = await sandbox.exec("ls / && ls /tmp | wc -l");
    expect(probe.tail.split("\n").filter((l) => /^(root|home|var|srv|work|mnt)$/.test(l))).toEqual([]);
  });

  it("runs commands unprivileged: no capability, not root, root's secrets unreadable, no remount", async () => {
    const sandbox = await provider().create("unprivileged", {});
    const caps = await sandbox.exec("grep CapEff /proc/self/status");
    expect(caps.tail).toBe("CapEff:\t0000000000000000\n");
    expect((await sandbox.exec("mount -o remount,rw /usr")).exitCode).not.toBe(0);
    if (process.getuid?.() === 0) {
      expect((await sandbox.exec("id -u")).tail).not.toBe("0\n");
      expect((await sandbox.exec("cat /etc/shadow")).exitCode).not.toBe(0);
    }
  });

  it("cannot see host processes", async () => {
    const marker = sleepMarker();
    const host = spawn("sleep", [marker], { stdio: "ignore" });
    try {
      await waitUntil(() => sleepPids(marker).length === 1, 5000, "the host's sleep");
      const sandbox = await provider().create("pids", {});
      const result = await sandbox.exec(
        "for p in /proc/[0-9]*; do echo \"$(basename $p) $(cat $p/comm) $(tr '\\0' ' ' < $p/cmdline)\"; done",
      );
      const lines = result.tail.trim().split("\n");
      expect(result.tail).not.toContain(marker);
      expect(
        lines.every((l) => /^\d+ (bwrap|sh|cat|tr|basename) /.test(l)),
        result.tail,
      ).toBe(true);
      expect(lines.length).toBeLessThanOrEqual(4);
      expect(lines.map((l) => Number(l.split(" ")[0]))).not.toContain(host.pid);
    } finally {
      host.kill("SIGKILL");
    }
  });

  it("kills processes that left the command's process group and session, on timeout", async () => {
    const sandbox = await provider().create("setsid", {});
    const [m1, m2] = [sleepMarker(), sleepMarker()];
    const running = sandbox.exec(`setsid sleep ${m1} & (trap '' HUP TERM; sleep ${m2}) & wait`, { timeoutMs: 1500 });
    await waitUntil(() => sleepPids(m1).length + sleepPids(m2).length === 2, 10_000, "both sleeps");
    const pids = [...sleepPids(m1), ...sleepPids(m2)];
    expect((await running).timedOut).toBe(true);
    await waitUntil(() => pids.every((pid) => !alive(pid)), 5000, "the sleeps to end");
  });

  it("leaves no process behind when the worker running the command is SIGKILLed", async () => {
    const marker = sleepMarker();
    const worker = spawn(process.execPath, ["--import", "tsx", WORKER, join(root, `p${++n}`), "crash", marker], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await waitUntil(() => sleepPids(marker).length === 2, 20_000, "the worker's two sleeps");
      const pids = sleepPids(marker);
      worker.kill("SIGKILL");
      await waitUntil(() => pids.every((pid) => !alive(pid)), 5000, "the sleeps to die with the worker");
    } finally {
      worker.kill("SIGKILL");
    }
  });

  describe("limits", () => {
    const allocate = `x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo \${#x}`;

    it("a command allocating past memoryBytes fails; the same command without the limit succeeds", async () => {
      const p = provider();
      const unlimited = await p.create("memory-free", {});
      expect((await unlimited.exec(allocate)).tail).toBe("200000000\n");
      const limited = await p.create("memory", { limits: { memoryBytes: 64 * 2 ** 20 } });
      const result = await limited.exec(allocate);
      expect(result.exitCode).not.toBe(0);
      expect(result.tail).not.toContain("200000000");
    });

    it("a busy loop past cpuSeconds is killed; a file past fileSizeBytes is cut; forks past processes fail", async () => {
      const p = provider();
      const sandbox = await p.create("limits", { limits: { cpuSeconds: 1, fileSizeBytes: 1_000_000, processes: 8 } });
      const busy = await sandbox.exec("while :; do :; done", { timeoutMs: 20_000 });
      expect(busy.timedOut).toBe(false);
      expect(busy.exitCode).toBe(128 + 24); // SIGXCPU, as bwrap reports a signal's end
      expect(busy.durationMs).toBeLessThan(10_000);
      const big = await sandbox.exec("head -c 3000000 /dev/zero > big");
      expect(big.exitCode).not.toBe(0);
      expect(statSync(join(root, `p${n}`, sandbox.info.id, "big")).size).toBeLessThanOrEqual(1_000_000);
      const forks = await sandbox.exec("for i in $(seq 1 30); do sleep 5 & done; wait", { timeoutMs: 20_000 });
      expect(forks.tail).toMatch(/fork|resource/i);
    });
  });
});
