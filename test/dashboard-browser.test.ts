import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The dashboard in a real browser (issue 7): `cairn dev` is started as a user would start it, a
 * run of the expense example asks a question and needs an approval, and both are given in the
 * dashboard; the run page shows the run complete live. A screenshot of the run page is saved to
 * test-results/dashboard-run.png.
 *
 * Needs Debian's chromium (`apt-get install chromium`), which `.ci/run` installs; where it is
 * missing the test is skipped with that message.
 */

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BUILT = existsSync(join(ROOT, "dist/dashboard/index.html"));
const skip = !existsSync(CHROMIUM)
  ? `chromium is not installed at ${CHROMIUM}: apt-get install chromium (Debian's package) to run the browser tests`
  : !BUILT
    ? "the dashboard is not built: npm run build"
    : undefined;
if (skip) console.warn(`dashboard browser tests skipped: ${skip}`);

describe.skipIf(skip !== undefined)("the dashboard in chromium", () => {
  let dev: ChildProcess | undefined;
  let browser: Browser | undefined;
  let url = "";
  let dir = "";
  const output: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-dashboard-"));
    dev = spawn(
      process.execPath,
      [join(ROOT, "bin/cairn.js"), "dev", "--port", "0", "--db", join(dir, "cairn.db"), "--as", "finance-lead"],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`cairn dev did not start:\n${output.join("")}`)), 30_000);
      const read = (chunk: Buffer) => {
        output.push(chunk.toString());
        const match = /cairn dev {2}(http:\/\/\S+?)\/ /.exec(output.join(""));
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      dev?.stdout?.on("data", read);
      dev?.stderr?.on("data", read);
      dev?.once("exit", (code) => reject(new Error(`cairn dev exited ${code}:\n${output.join("")}`)));
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    dev?.kill("SIGTERM");
    await new Promise((resolve) => (dev?.exitCode !== null ? resolve(null) : dev?.once("exit", resolve)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("answers a question and approves a payment in the dashboard, and watches the run complete", async () => {
    const started = await fetch(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        agent: "expenses",
        workflow: "submit",
        input: { employee: "ana", amount: 420, purpose: "client dinner" },
      }),
    });
    expect(started.status).toBe(201);
    const { run } = (await started.json()) as { run: { id: string } };
    const page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 1000 } });
    try {
      await page.goto(`${url}/#/runs/${run.id}`);
      const question = page.getByTestId("pending-question");
      await question.waitFor({ timeout: 15_000 });
      await expect.poll(() => question.textContent()).toContain("Which cost center pays");
      await page.getByTestId("answer-field-costCenter").fill("CC-1234");
      await page.getByTestId("answer-submit").click();
      const approval = page.getByTestId("pending-approval");
      await approval.waitFor({ timeout: 15_000 });
      // Exactly what is approved is shown before anyone approves it.
      const payload = (await page.getByTestId("approval-payload").textContent()) ?? "";
      expect(payload).toContain("CC-1234");
      expect(payload).toContain("420");
      await page.getByTestId("approve-button").click();
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
      mkdirSync(join(ROOT, "test-results"), { recursive: true });
      await page.screenshot({ path: join(ROOT, "test-results/dashboard-run.png"), fullPage: true });
      // Forked from step 4 (the answer and the approval kept): the page goes to the new run, which
      // completes without asking again, and names the run it comes from.
      await page.getByTestId("fork-step").fill("4");
      await page.getByTestId("fork-button").click();
      await expect.poll(() => page.getByTestId("forked-from").textContent(), { timeout: 15_000 }).toContain(run.id);
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
      expect(page.url()).not.toContain(run.id);
    } finally {
      await page.close();
    }
    const transitions = (await (await fetch(`${url}/api/runs/${run.id}/transitions`)).json()) as {
      transitions: { to: string; actor: { id: string } }[];
    };
    expect(transitions.transitions.map((t) => t.to)).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED",
      "RESUMING",
      "RUNNING",
      "PAUSED",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
    ]);
    // The answer and the approval were given as the dashboard's user, not as anyone the page said.
    const resumedBy = transitions.transitions.filter((t) => t.to === "RESUMING").map((t) => t.actor.id);
    expect(resumedBy).toEqual(["finance-lead", "finance-lead"]);
    const waits = (await (await fetch(`${url}/api/runs/${run.id}/waits`)).json()) as {
      waits: { kind: string; resolution?: { by?: { id: string } } }[];
    };
    const decided = waits.waits.find((w) => w.kind === "approval");
    expect(JSON.stringify(decided)).toContain("finance-lead");

    // The runs page, filtered to runs created in the last hour: the filter goes into the URL and
    // the API call asks for runs created since an hour ago; the run just made is listed.
    const list = await (browser as Browser).newPage({ viewport: { width: 1280, height: 1000 } });
    try {
      await list.goto(`${url}/#/runs`);
      await list.getByTestId(`run-row-${run.id}`).waitFor({ timeout: 15_000 });
      const asked = list.waitForRequest((r) => r.url().includes("/api/runs?") && r.url().includes("since="));
      const clicked = Date.now();
      await list.getByTestId("filter-created").selectOption("1h");
      const since = Number(new URL((await asked).url()).searchParams.get("since"));
      expect(since).toBeGreaterThan(clicked - 3_600_000 - 60_000);
      expect(since).toBeLessThanOrEqual(Date.now() - 3_600_000);
      await expect.poll(() => list.url()).toContain("created=1h");
      await list.getByTestId(`run-row-${run.id}`).waitFor({ timeout: 15_000 });
    } finally {
      await list.close();
    }
  }, 60_000);
});
