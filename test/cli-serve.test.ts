import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CliError } from "../src/cli/cli-error.ts";
import { loadMetricsToken } from "../src/cli/commands/serve.ts";
import { background } from "./helpers/cli.ts";

/**
 * `cairn serve`'s scraper token for `GET /metrics`: read from `--metrics-token-file` or
 * `CAIRN_METRICS_TOKEN` (never from the command line), and given to the server, where it opens
 * `/metrics` and nothing else.
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-serve-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCRAPER = "scraper-token-0123456789";
const ADMIN = "admin-token-0123456789ab";

describe("cairn serve --metrics-token-file", () => {
  it("reads the token from the file, else from CAIRN_METRICS_TOKEN, and refuses a short one", () => {
    const file = join(dir, "metrics-token");
    writeFileSync(file, `${SCRAPER}\n`);
    expect(loadMetricsToken(file, { CAIRN_METRICS_TOKEN: "from-the-environment-000" })).toBe(SCRAPER);
    expect(loadMetricsToken(undefined, { CAIRN_METRICS_TOKEN: ` ${SCRAPER} ` })).toBe(SCRAPER);
    expect(loadMetricsToken(undefined, { CAIRN_METRICS_TOKEN: "" })).toBeUndefined();
    expect(loadMetricsToken(undefined, {})).toBeUndefined();
    // The message names where the token came from, never the token.
    expect(() => loadMetricsToken(undefined, { CAIRN_METRICS_TOKEN: "short-secret" })).toThrow(
      /^CAIRN_METRICS_TOKEN: a metrics token is at least 16 characters/,
    );
    expect(() => loadMetricsToken(undefined, { CAIRN_METRICS_TOKEN: "short-secret" })).not.toThrow(/short-secret/);
    expect(() => loadMetricsToken(join(dir, "missing"), {})).toThrow(CliError);
  });

  it("serves /metrics to the scraper's token, which opens nothing else", async () => {
    const file = join(dir, "scraper");
    writeFileSync(file, SCRAPER);
    const args = ["serve", "examples/report-builder.ts", "--port", "0", "--db", join(dir, "serve.db")];
    const server = background([...args, "--metrics-token-file", file], { CAIRN_TOKENS: `${ADMIN}:ops:admin` });
    try {
      const url = await listening(server);
      const get = (path: string, token?: string) =>
        fetch(`${url}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      expect((await get("/metrics")).status).toBe(401);
      const scraped = await get("/metrics", SCRAPER);
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await scraped.text()).toMatch(/^cairn_runs\{state="COMPLETED"\} 0$/m);
      expect((await get("/api/runs", SCRAPER)).status).toBe(401);
      expect((await get("/api/runs", ADMIN)).status).toBe(200);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 60_000);
});

/** The URL `cairn serve` prints once it listens. */
async function listening(server: ReturnType<typeof background>): Promise<string> {
  for (const deadline = Date.now() + 45_000; Date.now() < deadline; ) {
    const url = /cairn serve {2}(http:\/\/\S+?)\/ /.exec(server.stdout())?.[1];
    if (url) return url;
    if (server.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`cairn serve did not start:\n${server.stdout()}\n${server.stderr()}`);
}
