import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

/**
 * `cairn dev` started as a user starts it, with the expense and research examples and the
 * dashboard fixture agent (test/fixtures/dashboard-agent.ts), and Debian's chromium: what the
 * dashboard's browser tests and `scripts/screenshots.ts` drive.
 */

export const CHROMIUM = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Why the browser tests cannot run here, or undefined. */
export function browserSkipReason(): string | undefined {
  if (!existsSync(CHROMIUM)) {
    return `chromium is not installed at ${CHROMIUM}: apt-get install chromium (Debian's package) to run the browser tests`;
  }
  if (!existsSync(join(ROOT, "dist/dashboard/index.html"))) return "the dashboard is not built: npm run build";
  return undefined;
}

export const DEV_MODULES = [
  "examples/expense-approval.ts",
  "examples/research-agent/research.ts",
  "test/fixtures/dashboard-agent.ts",
];

export interface DevDashboard {
  url: string;
  browser: Browser;
  /** `POST /api/runs` as the dev server's own subject; the run record. */
  start(agent: string, workflow: string, input: unknown, key?: string): Promise<{ id: string }>;
  /** GET an API path, parsed. */
  get<T = any>(path: string): Promise<T>;
  /** Polls the run until it is in `state`. */
  untilState(runId: string, state: string): Promise<any>;
  /**
   * A fresh tab at `#<hash>` in a fresh browser context (its own sessionStorage, so no identity
   * carries over); close it with `page.context().close()`.
   */
  open(hash: string): Promise<Page>;
  close(): Promise<void>;
}

export async function startDevDashboard(extraArgs: string[] = []): Promise<DevDashboard> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-dashboard-"));
  const output: string[] = [];
  const dev: ChildProcess = spawn(
    process.execPath,
    [join(ROOT, "bin/cairn.js"), "dev", ...DEV_MODULES, "--port", "0", "--db", join(dir, "cairn.db"), ...extraArgs],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`cairn dev did not start:\n${output.join("")}`)), 30_000);
    const read = (chunk: Buffer) => {
      output.push(chunk.toString());
      const match = /cairn dev {2}(http:\/\/\S+?)\/ /.exec(output.join(""));
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    dev.stdout?.on("data", read);
    dev.stderr?.on("data", read);
    dev.once("exit", (code) => reject(new Error(`cairn dev exited ${code}:\n${output.join("")}`)));
  });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
  const get = async (path: string): Promise<any> => (await fetch(`${url}${path}`)).json();
  return {
    url,
    browser,
    get,
    async start(agent, workflow, input, key) {
      const response = await fetch(`${url}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent, workflow, input, ...(key && { key }) }),
      });
      if (response.status >= 300) throw new Error(`start ${agent}/${workflow}: ${await response.text()}`);
      return ((await response.json()) as { run: { id: string } }).run;
    },
    async untilState(runId, state) {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const { run } = await get(`/api/runs/${runId}`);
        if (run.state === state) return run;
        if (Date.now() > deadline) throw new Error(`run ${runId} is ${run.state}, not ${state}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async open(hash) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
      const page = await context.newPage();
      await page.goto(`${url}/#${hash}`);
      return page;
    },
    async close() {
      await browser.close();
      dev.kill("SIGTERM");
      await new Promise((resolve) => (dev.exitCode !== null ? resolve(null) : dev.once("exit", resolve)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
