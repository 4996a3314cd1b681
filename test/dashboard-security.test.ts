import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { createServer } from "../src/server/app.ts";
import { type ListeningServer, serve } from "../src/server/serve.ts";
import { desk, TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * The dashboard's server against a hostile browser page (issue 21), in a real Chromium:
 * - `cairn dev` (no tokens: every request acts as its `--as` identity) started as a user starts
 *   it; pages served by a second local HTTP server, of another origin (same-site on 127.0.0.1,
 *   cross-site on localhost), try to start, cancel, answer and read with fetch (CORS, no-cors,
 *   JSON, text/plain, empty bodies), a form POST and an EventSource; a DNS-rebinding page (its
 *   own name, `rebind.test`, resolved to 127.0.0.1 by the browser's resolver rules, its HTML
 *   served under that name) tries the same from what the browser thinks is the server's origin.
 *   None of it reads anything, and the database is what it was.
 * - the dashboard on a server with tokens keeps the token in this tab's sessionStorage, never in
 *   localStorage nor in a URL, and still follows a run live (its streams read with fetch).
 *
 * Needs Debian's chromium and the built dashboard, as test/dashboard-browser.test.ts.
 */

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DASHBOARD = join(ROOT, "dist/dashboard");
const skip = !existsSync(CHROMIUM)
  ? `chromium is not installed at ${CHROMIUM}: apt-get install chromium (Debian's package) to run the browser tests`
  : !existsSync(join(DASHBOARD, "index.html"))
    ? "the dashboard is not built: npm run build"
    : undefined;
if (skip) console.warn(`dashboard security tests skipped: ${skip}`);

/** What the hostile page tries; each entry says what the page could see. */
const ATTACK = (dev: string, runId: string) => `
const dev = ${JSON.stringify(dev)};
const runId = ${JSON.stringify(runId)};
const start = JSON.stringify({ agent: "expenses", workflow: "submit", input: { employee: "mallory", amount: 1, purpose: "x" } });
const attempts = {
  "read (cors)": () => fetch(dev + "/api/runs"),
  "read (no-cors)": () => fetch(dev + "/api/runs", { mode: "no-cors" }),
  "read run (cors)": () => fetch(dev + "/api/runs/" + runId + "/waits"),
  "start (json)": () => fetch(dev + "/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: start }),
  "start (no-cors)": () => fetch(dev + "/api/runs", { method: "POST", mode: "no-cors", body: start }),
  "start (no-cors, json type)": () => fetch(dev + "/api/runs", { method: "POST", mode: "no-cors", headers: { "content-type": "application/json" }, body: start }),
  "cancel (no-cors, empty)": () => fetch(dev + "/api/runs/" + runId + "/cancel", { method: "POST", mode: "no-cors" }),
  "cancel (cors, empty)": () => fetch(dev + "/api/runs/" + runId + "/cancel", { method: "POST" }),
  "answer (no-cors)": () => fetch(dev + "/api/runs/" + runId + "/waits/w1/answer", { method: "POST", mode: "no-cors", body: JSON.stringify({ value: { costCenter: "EVIL" } }) }),
  "resume (no-cors)": () => fetch(dev + "/api/runs/" + runId + "/resume", { method: "POST", mode: "no-cors" }),
};
window.results = (async () => {
  const out = {};
  for (const [name, attempt] of Object.entries(attempts)) {
    try {
      const response = await attempt();
      let text = "";
      try { text = await response.text(); } catch {}
      out[name] = { status: response.status, type: response.type, text: text.slice(0, 300) };
    } catch (error) {
      out[name] = { error: String(error) };
    }
  }
  out.events = await new Promise((resolve) => {
    const got = [];
    let source;
    try { source = new EventSource(dev + "/api/events"); } catch (error) { resolve({ error: String(error) }); return; }
    source.addEventListener("ready", (e) => got.push(e.data));
    source.addEventListener("transition", (e) => got.push(e.data));
    source.onerror = () => { source.close(); resolve({ error: "error", got }); };
    setTimeout(() => { source.close(); resolve({ got }); }, 3000);
  });
  return out;
})();
`;

const FORM = (dev: string, runId: string) => `<!doctype html>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="${dev}/api/runs/${runId}/cancel">
  <input name='{"reason":"' value='csrf"}'>
</form>
<form id="g" method="POST" enctype="application/x-www-form-urlencoded" target="sink" action="${dev}/api/runs/${runId}/resume"></form>
<script>document.getElementById("f").submit(); setTimeout(() => document.getElementById("g").submit(), 300);</script>`;

describe.skipIf(skip !== undefined)("pages of other origins against cairn dev, in chromium", () => {
  let dev: ChildProcess | undefined;
  let attacker: Server | undefined;
  let browser: Browser | undefined;
  let url = "";
  let devPort = 0;
  let attackPort = 0;
  let dir = "";
  const output: string[] = [];
  const pages: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-dashboard-security-"));
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
    devPort = Number(new URL(url).port);
    attacker = createHttpServer((req, res) => {
      const page = pages[req.url ?? ""];
      res.writeHead(page === undefined ? 404 : 200, { "content-type": "text/html" }).end(page ?? "");
    });
    await new Promise<void>((resolve) => attacker?.listen(0, "127.0.0.1", resolve));
    attackPort = (attacker.address() as AddressInfo).port;
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
        // DNS rebinding, as the browser sees it: the page's own name now resolves to loopback.
        "--host-resolver-rules=MAP rebind.test 127.0.0.1",
        // Chromium's own guard against public pages calling loopback (Local Network Access)
        // would refuse the rebinding page's requests before they leave; other browsers have none.
        // Off, so that what is tested is the server.
        "--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests",
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (attacker ? attacker.close(resolve) : resolve(null)));
    dev?.kill("SIGTERM");
    await new Promise((resolve) => (dev?.exitCode !== null ? resolve(null) : dev?.once("exit", resolve)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Every run with its state and last transition, as the server's own client sees them. */
  const snapshot = async () => {
    const { runs } = (await (await fetch(`${url}/api/runs?limit=200`)).json()) as {
      runs: { id: string; state: string; lastTransitionId: number }[];
    };
    return runs.map((r) => `${r.id} ${r.state} ${r.lastTransitionId}`).sort();
  };

  const runAttack = async (page: Page, at: string) => {
    await page.goto(at);
    return (await page.evaluate("window.results")) as Record<
      string,
      { status?: number; error?: string; text?: string; got?: string[] }
    >;
  };

  it("a page of another origin cannot start, cancel, answer, resume or read anything", async () => {
    const started = await fetch(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        agent: "expenses",
        workflow: "submit",
        input: { employee: "ana", amount: 420, purpose: "dinner" },
      }),
    });
    expect(started.status).toBe(201);
    const { run } = (await started.json()) as { run: { id: string; meta: Record<string, unknown> } };
    // The module a later `cairn resume` imports is the one cairn dev loaded the agent from.
    expect(run.meta.module).toBe(join(ROOT, "examples/expense-approval.ts"));
    await expect
      .poll(
        async () => ((await (await fetch(`${url}/api/runs/${run.id}`)).json()) as { run: { state: string } }).run.state,
        {
          timeout: 15_000,
        },
      )
      .toBe("PAUSED");
    const before = await snapshot();

    pages["/attack.html"] = `<!doctype html><script>${ATTACK(url, run.id)}</script>`;
    pages["/form.html"] = FORM(url, run.id);
    const page = await (browser as Browser).newPage();
    try {
      // Same site, other port (127.0.0.1), and another site altogether (localhost).
      for (const origin of [`http://127.0.0.1:${attackPort}`, `http://localhost:${attackPort}`]) {
        const results = await runAttack(page, `${origin}/attack.html`);
        for (const [name, result] of Object.entries(results)) {
          // Nothing the page can see holds a run: errors, opaque responses (status 0) or refusals.
          expect(JSON.stringify(result), `${origin} ${name}`).not.toContain(run.id);
          expect(JSON.stringify(result), `${origin} ${name}`).not.toContain('"runs"');
          if (name !== "events") expect(result.status ?? 0, `${origin} ${name}`).not.toBe(200);
        }
        expect(results.events?.got ?? []).toEqual([]);
        await page.goto(`${origin}/form.html`);
        await page.waitForTimeout(1000);
      }
    } finally {
      await page.close();
    }
    expect(await snapshot()).toEqual(before);
  }, 90_000);

  it("a DNS-rebinding page, same-origin in the browser's eyes, is refused by the Host check", async () => {
    const before = await snapshot();
    const [first] = before;
    const runId = first?.split(" ")[0] ?? "none";
    const page = await (browser as Browser).newPage();
    try {
      const origin = `http://rebind.test:${devPort}`;
      // The page was served by the attacker under that name; its requests now reach cairn dev.
      await page.route(`${origin}/attack.html`, (route) =>
        route.fulfill({ contentType: "text/html", body: `<!doctype html><script>${ATTACK("", runId)}</script>` }),
      );
      const results = await runAttack(page, `${origin}/attack.html`);
      for (const name of ["read (cors)", "read run (cors)", "start (json)", "cancel (cors, empty)"]) {
        // Readable (same origin for the browser), and refused by the server: 421 UNKNOWN_HOST.
        expect(results[name]?.status, name).toBe(421);
        expect(results[name]?.text, name).toContain("UNKNOWN_HOST");
      }
      for (const result of Object.values(results)) expect(JSON.stringify(result)).not.toContain(runId);
      expect(results.events?.got ?? []).toEqual([]);
      // The dashboard itself is not served under that name either.
      const response = await page.goto(`${origin}/`);
      expect(response?.status()).toBe(421);
    } finally {
      await page.close();
    }
    expect(await snapshot()).toEqual(before);
  }, 60_000);
});

describe.skipIf(skip !== undefined)("the dashboard on a server with tokens, in chromium", () => {
  let runtime: Runtime | undefined;
  let listening: ListeningServer | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    runtime = new Runtime({ agents: [desk], backend: new InMemoryBackend(), logger: silentLogger });
    const server = createServer(runtime, { tokens: TOKEN_CONFIGS, staticRoot: DASHBOARD, logger: silentLogger });
    await runtime.start();
    listening = await serve(server, { port: 0, print: () => {} });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await listening?.close();
    await runtime?.shutdown({ graceMs: 0 });
  });

  it("keeps the token in this tab's session, out of URLs, and follows a run live over fetch", async () => {
    const base = (listening as ListeningServer).url;
    const rt = runtime as Runtime;
    const handle = await rt.run("desk", "signal", null);
    await expect.poll(async () => (await rt.getRun(handle.id)).state).toBe("PAUSED");
    const page = await (browser as Browser).newPage();
    const urls: string[] = [];
    const streams: { url: string; authorization: string | undefined }[] = [];
    const violations: string[] = [];
    page.on("request", (request) => {
      urls.push(request.url());
      if (request.url().endsWith("/events")) {
        streams.push({ url: request.url(), authorization: request.headers().authorization });
      }
    });
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    try {
      await page.goto(`${base}/#/runs/${handle.id}`);
      await page.getByTestId("token-input").fill(TOKENS.admin);
      await page.getByTestId("token-save").click();
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("PAUSED");
      // The stream is open: a signal sent elsewhere shows up live on the page.
      await expect.poll(() => streams.length, { timeout: 10_000 }).toBeGreaterThan(0);
      await rt.signal(handle.id, "go", { x: 1 });
      await expect.poll(() => page.getByTestId("run-state").textContent(), { timeout: 15_000 }).toContain("COMPLETED");
      const stored = (await page.evaluate(
        `({ local: JSON.stringify({ ...localStorage }), session: sessionStorage.getItem("cairn.token") })`,
      )) as { local: string; session: string | null };
      expect(JSON.stringify(stored.local)).not.toContain(TOKENS.admin);
      expect(stored.session).toBe(TOKENS.admin);
      expect(urls.filter((u) => u.includes(TOKENS.admin) || u.includes("token="))).toEqual([]);
      expect(streams.at(-1)?.authorization).toBe(`Bearer ${TOKENS.admin}`);
      expect(violations).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});
