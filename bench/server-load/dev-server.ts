import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { deadline, dir, ROOT } from "./options.ts";

/** The server: `cairn dev` as a child process, and what /proc says of its CPU and memory. */

export interface Server {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

export async function startServer(): Promise<Server> {
  const env = { ...process.env };
  delete env.CAIRN_DEMO_STEP_DELAY_MS;
  const child = spawn(
    process.execPath,
    [join(ROOT, "bin", "cairn.js"), "dev", "--port", "0", "--db", join(dir, "cairn.db")],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let err = "";
  child.stderr?.setEncoding("utf8").on("data", (text: string) => {
    err = (err + text).slice(-4000);
  });
  // `cairn dev` prints every transition on stdout: read it all (a full pipe would block the server).
  let out = "";
  let url: string | undefined;
  const found = new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (text: string) => {
      if (url !== undefined) return;
      out += text;
      const match = /^cairn dev\s+(http:\/\/\S+?)\/?\s/m.exec(out);
      if (match?.[1]) {
        url = match[1];
        out = "";
        resolve(url);
      }
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`cairn dev exited (${signal ?? code}) before printing its URL:\n${out}${err}`)),
    );
    setTimeout(() => reject(new Error(`cairn dev printed no URL within 60 s:\n${out}${err}`)), 60_000).unref();
  });
  return { child, url: await found, stderr: () => err };
}

export async function stopServer(child: ChildProcess): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) return `had exited (${child.signalCode ?? child.exitCode})`;
  const exited = new Promise<string>((r) => child.once("exit", (code, signal) => r(String(signal ?? code))));
  child.kill("SIGTERM");
  const timeout = deadline(15_000).then(() => undefined);
  const how = await Promise.race([exited, timeout]);
  if (how !== undefined) return `exited on SIGTERM (${how})`;
  child.kill("SIGKILL");
  return `did not exit within 15 s of SIGTERM: killed (${await exited})`;
}

/** CPU seconds (user + system) of a process, from /proc (Linux); undefined elsewhere. */
export function cpuSecondsOf(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 (utime, stime) of proc(5), counted from after the command name; 100 ticks/s.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

export function rssOf(pid: number | undefined): string {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? `${(Number(kb) / 1024).toFixed(0)} MB` : "?";
  } catch {
    return "?";
  }
}
